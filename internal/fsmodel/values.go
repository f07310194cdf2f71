package fsmodel

import (
	"cmp"
	"math"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// transform applies a write's field transforms to doc, in order, and
// returns each one's result.
func transform(doc *pb.Document, ts []*pb.DocumentTransform_FieldTransform, at time.Time) ([]*pb.Value, error) {
	var results []*pb.Value
	for _, t := range ts {
		var v *pb.Value
		switch tt := t.GetTransformType().(type) {
		case *pb.DocumentTransform_FieldTransform_SetToServerValue:
			// The request's time, to the millisecond, as the emulator sets
			// it: before the commit's, never equal to it (the update times
			// keep the microseconds), so code that takes one for the other
			// is caught.
			v = &pb.Value{ValueType: &pb.Value_TimestampValue{TimestampValue: timestamppb.New(at.Add(-time.Millisecond).Truncate(time.Millisecond))}}
		case *pb.DocumentTransform_FieldTransform_Increment:
			old, _ := lookup(doc.GetFields(), t.GetFieldPath())
			v = increment(old, tt.Increment)
		default:
			return nil, status.Errorf(codes.Unimplemented, "fsmodel: transform %T", tt)
		}
		setPath(doc.Fields, t.GetFieldPath(), v)
		results = append(results, v)
	}
	return results, nil
}

// increment adds by to old as Firestore does: integers add and saturate
// at int64's limits, a double on either side makes a double, and a value
// that is not a number (or none) is replaced by by.
func increment(old, by *pb.Value) *pb.Value {
	oi, oInt := old.GetValueType().(*pb.Value_IntegerValue)
	_, oDouble := old.GetValueType().(*pb.Value_DoubleValue)
	bi, bInt := by.GetValueType().(*pb.Value_IntegerValue)
	switch {
	case oInt && bInt:
		a, b := oi.IntegerValue, bi.IntegerValue
		s := a + b
		switch {
		case b > 0 && s < a:
			s = math.MaxInt64
		case b < 0 && s > a:
			s = math.MinInt64
		}
		return intValue(s)
	case oInt || oDouble:
		return doubleValue(number(old) + number(by))
	}
	return by
}

func intValue(v int64) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: v}}
}
func doubleValue(v float64) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_DoubleValue{DoubleValue: v}}
}

// number is a numeric value as a float64.
func number(v *pb.Value) float64 {
	switch t := v.GetValueType().(type) {
	case *pb.Value_IntegerValue:
		return float64(t.IntegerValue)
	case *pb.Value_DoubleValue:
		return t.DoubleValue
	}
	return 0
}

// typeOrder is Firestore's order of value types.
func typeOrder(v *pb.Value) int {
	switch v.GetValueType().(type) {
	case *pb.Value_NullValue:
		return 0
	case *pb.Value_BooleanValue:
		return 1
	case *pb.Value_IntegerValue, *pb.Value_DoubleValue:
		return 2
	case *pb.Value_TimestampValue:
		return 3
	case *pb.Value_StringValue:
		return 4
	case *pb.Value_BytesValue:
		return 5
	case *pb.Value_ReferenceValue:
		return 6
	case *pb.Value_GeoPointValue:
		return 7
	case *pb.Value_ArrayValue:
		return 8
	case *pb.Value_MapValue:
		return 9
	}
	return 10
}

// compare orders two values as Firestore does: by type, then by value
// (numbers by value, integers and doubles together).
func compare(a, b *pb.Value) int {
	if c := cmp.Compare(typeOrder(a), typeOrder(b)); c != 0 {
		return c
	}
	switch av := a.GetValueType().(type) {
	case *pb.Value_BooleanValue:
		return cmpBool(av.BooleanValue, b.GetBooleanValue())
	case *pb.Value_IntegerValue:
		if bi, ok := b.GetValueType().(*pb.Value_IntegerValue); ok {
			return cmp.Compare(av.IntegerValue, bi.IntegerValue)
		}
		return cmp.Compare(number(a), number(b))
	case *pb.Value_DoubleValue:
		return cmp.Compare(number(a), number(b))
	case *pb.Value_TimestampValue:
		return av.TimestampValue.AsTime().Compare(b.GetTimestampValue().AsTime())
	case *pb.Value_StringValue:
		return strings.Compare(av.StringValue, b.GetStringValue())
	case *pb.Value_BytesValue:
		return strings.Compare(string(av.BytesValue), string(b.GetBytesValue()))
	case *pb.Value_ReferenceValue:
		return compareNames(av.ReferenceValue, b.GetReferenceValue())
	case *pb.Value_ArrayValue:
		x, y := av.ArrayValue.GetValues(), b.GetArrayValue().GetValues()
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := compare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(x), len(y))
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// compareNames orders document names segment by segment.
func compareNames(a, b string) int {
	x, y := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(x) && i < len(y); i++ {
		if c := strings.Compare(x[i], y[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(x), len(y))
}

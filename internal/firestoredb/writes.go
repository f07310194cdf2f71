package firestoredb

import (
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// CreateWrite creates the document name with fields; the commit fails with
// AlreadyExists if it exists.
func CreateWrite(name string, fields map[string]*pb.Value) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}},
	}
}

// ReplaceWrite overwrites the document name with fields if it was last
// updated at updated; the commit fails with FailedPrecondition otherwise.
func ReplaceWrite(name string, fields map[string]*pb.Value, updated time.Time) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(updated)}},
	}
}

// UpdateWrite sets the fields of mask (a top-level field or "a.b") to the
// values in fields, on an existing document last updated at updated.
func UpdateWrite(name string, fields map[string]*pb.Value, mask []string, updated time.Time) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		UpdateMask:      &pb.DocumentMask{FieldPaths: mask},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(updated)}},
	}
}

// PatchWrite sets the fields of mask to the values in fields, on an
// existing document, whatever its version; the commit fails with NotFound
// if it does not exist.
func PatchWrite(name string, fields map[string]*pb.Value, mask []string) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		UpdateMask:      &pb.DocumentMask{FieldPaths: mask},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: true}},
	}
}

// SetWrite writes the document name with fields, whatever it held.
func SetWrite(name string, fields map[string]*pb.Value) *pb.Write {
	return &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}}}
}

// DeleteWrite deletes the document name if it was last updated at updated.
func DeleteWrite(name string, updated time.Time) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Delete{Delete: name},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(updated)}},
	}
}

// IncrementWrite adds each delta to its integer field, creating the
// document (and the fields, from 0) when missing. Concurrent increments
// never conflict.
func IncrementWrite(name string, deltas map[string]int64) *pb.Write {
	w := &pb.Write{
		Operation:  &pb.Write_Update{Update: &pb.Document{Name: name}},
		UpdateMask: &pb.DocumentMask{},
	}
	for _, field := range slices.Sorted(maps.Keys(deltas)) {
		w.UpdateTransforms = append(w.UpdateTransforms, Increment(field, deltas[field]))
	}
	return w
}

// Increment is the transform adding n to an integer field.
func Increment(field string, n int64) *pb.DocumentTransform_FieldTransform {
	return &pb.DocumentTransform_FieldTransform{
		FieldPath:     field,
		TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: IntValue(n)},
	}
}

// IntValue, StringValue, TimeValue, MapValue and BoolValue are Firestore values.
func IntValue(v int64) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: v}}
}

func StringValue(v string) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_StringValue{StringValue: v}}
}

func TimeValue(t time.Time) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_TimestampValue{TimestampValue: timestamppb.New(t)}}
}

func MapValue(fields map[string]*pb.Value) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_MapValue{MapValue: &pb.MapValue{Fields: fields}}}
}

// BytesValue is a bytes value.
func BytesValue(b []byte) *pb.Value { return &pb.Value{ValueType: &pb.Value_BytesValue{BytesValue: b}} }

// StringsValue is an array of strings.
func StringsValue(vs []string) *pb.Value {
	a := &pb.ArrayValue{}
	for _, v := range vs {
		a.Values = append(a.Values, StringValue(v))
	}
	return &pb.Value{ValueType: &pb.Value_ArrayValue{ArrayValue: a}}
}

func BoolValue(v bool) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_BooleanValue{BooleanValue: v}}
}

// ServerTime is the transform setting field to the commit's time.
func ServerTime(field string) *pb.DocumentTransform_FieldTransform {
	return &pb.DocumentTransform_FieldTransform{FieldPath: field,
		TransformType: &pb.DocumentTransform_FieldTransform_SetToServerValue{SetToServerValue: pb.DocumentTransform_FieldTransform_REQUEST_TIME}}
}

// RemoveWrite deletes the document name, whatever its version (nothing if
// it does not exist).
func RemoveWrite(name string) *pb.Write { return &pb.Write{Operation: &pb.Write_Delete{Delete: name}} }

// SetFieldsWrite sets fields of the document name, creating it when
// missing, and leaves its other fields alone.
func SetFieldsWrite(name string, fields map[string]*pb.Value) *pb.Write {
	return &pb.Write{
		Operation:  &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		UpdateMask: &pb.DocumentMask{FieldPaths: slices.Sorted(maps.Keys(fields))},
	}
}

// VersionOf returns the update time a write of a commit left.
func VersionOf(resp *pb.CommitResponse, write int) time.Time {
	return resp.GetWriteResults()[write].GetUpdateTime().AsTime()
}

// TransformResult returns the integer a field transform of a write left,
// from the commit's answer; transforms lists the write's transformed
// fields in order.
func TransformResult(r *pb.WriteResult, field string, transforms []string) (int64, bool) {
	for i, f := range transforms {
		if f == field && i < len(r.GetTransformResults()) {
			if v, ok := r.GetTransformResults()[i].GetValueType().(*pb.Value_IntegerValue); ok {
				return v.IntegerValue, true
			}
		}
	}
	return 0, false
}

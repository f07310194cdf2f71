package firestoredb

import (
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// createWrite creates the document name with fields; the commit fails with
// AlreadyExists if it exists.
func createWrite(name string, fields map[string]*pb.Value) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}},
	}
}

// replaceWrite overwrites the document name with fields if it was last
// updated at updated; the commit fails with FailedPrecondition otherwise.
func replaceWrite(name string, fields map[string]*pb.Value, updated time.Time) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(updated)}},
	}
}

// updateWrite sets the fields of mask (a top-level field or "a.b") to the
// values in fields, on an existing document last updated at updated.
func updateWrite(name string, fields map[string]*pb.Value, mask []string, updated time.Time) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: name, Fields: fields}},
		UpdateMask:      &pb.DocumentMask{FieldPaths: mask},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(updated)}},
	}
}

// deleteWrite deletes the document name if it was last updated at updated.
func deleteWrite(name string, updated time.Time) *pb.Write {
	return &pb.Write{
		Operation:       &pb.Write_Delete{Delete: name},
		CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(updated)}},
	}
}

// incrementWrite adds each delta to its integer field, creating the
// document (and the fields, from 0) when missing. Concurrent increments
// never conflict.
func incrementWrite(name string, deltas map[string]int64) *pb.Write {
	w := &pb.Write{
		Operation:  &pb.Write_Update{Update: &pb.Document{Name: name}},
		UpdateMask: &pb.DocumentMask{},
	}
	for _, field := range slices.Sorted(maps.Keys(deltas)) {
		w.UpdateTransforms = append(w.UpdateTransforms, increment(field, deltas[field]))
	}
	return w
}

// increment is the transform adding n to an integer field.
func increment(field string, n int64) *pb.DocumentTransform_FieldTransform {
	return &pb.DocumentTransform_FieldTransform{
		FieldPath:     field,
		TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: intValue(n)},
	}
}

func intValue(v int64) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: v}}
}

func stringValue(v string) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_StringValue{StringValue: v}}
}

func timeValue(t time.Time) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_TimestampValue{TimestampValue: timestamppb.New(t)}}
}

func mapValue(fields map[string]*pb.Value) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_MapValue{MapValue: &pb.MapValue{Fields: fields}}}
}

func boolValue(v bool) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_BooleanValue{BooleanValue: v}}
}

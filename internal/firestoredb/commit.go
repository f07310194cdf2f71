package firestoredb

import (
	"context"
	"fmt"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Commit applies writes atomically in one round trip and returns the commit
// time. The firestore package offers this only through the deprecated
// WriteBatch or a transaction (two round trips), hence the raw call.
func (db *DB) Commit(ctx context.Context, writes ...*pb.Write) (time.Time, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", db.database)
	resp, err := db.raw.Commit(ctx, &pb.CommitRequest{Database: db.database, Writes: writes})
	if err != nil {
		return time.Time{}, fmt.Errorf("firestoredb: commit: %w", err)
	}
	return resp.GetCommitTime().AsTime(), nil
}

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

// IncrementWrite adds delta to an integer field, creating the document (and
// the field, from 0) when missing. Concurrent increments never conflict.
func IncrementWrite(name, field string, delta int64) *pb.Write {
	return &pb.Write{
		Operation:  &pb.Write_Update{Update: &pb.Document{Name: name}},
		UpdateMask: &pb.DocumentMask{},
		UpdateTransforms: []*pb.DocumentTransform_FieldTransform{{
			FieldPath:     field,
			TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: Int(delta)},
		}},
	}
}

// Int, String, Time and Map build Firestore values.
func Int(v int64) *pb.Value { return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: v}} }

func String(v string) *pb.Value { return &pb.Value{ValueType: &pb.Value_StringValue{StringValue: v}} }

func Time(t time.Time) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_TimestampValue{TimestampValue: timestamppb.New(t)}}
}

func Map(fields map[string]*pb.Value) *pb.Value {
	return &pb.Value{ValueType: &pb.Value_MapValue{MapValue: &pb.MapValue{Fields: fields}}}
}

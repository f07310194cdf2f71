package fsevent

import (
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const name = "projects/demo-x/databases/(default)/documents/counters/c1/shards/3"

func shardDoc(count int64, updated time.Time) *pb.Document {
	return &pb.Document{
		Name:       name,
		Fields:     map[string]*pb.Value{"count": {ValueType: &pb.Value_IntegerValue{IntegerValue: count}}},
		CreateTime: timestamppb.New(updated.Add(-time.Minute)),
		UpdateTime: timestamppb.New(updated),
	}
}

// eventData encodes a DocumentEventData the way Eventarc does, with an
// update mask and a field from a future version.
func eventData(t *testing.T, value, old *pb.Document, mask []string) []byte {
	t.Helper()
	b, err := Encode(value, old)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := proto.Marshal(&pb.DocumentMask{FieldPaths: mask})
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, m)
	// A field from a future version must be skipped.
	b = protowire.AppendTag(b, 9, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	return b
}

func count(d *pb.Document) int64 { return d.GetFields()["count"].GetIntegerValue() }

func TestDecodeCreated(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	e, err := Decode("application/protobuf", eventData(t, shardDoc(5, at), nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if e.OldValue != nil || count(e.Value) != 5 || e.Deleted() {
		t.Errorf("created event = %+v", e)
	}
	if e.Path() != "counters/c1/shards/3" || e.Name() != name {
		t.Errorf("path %q name %q", e.Path(), e.Name())
	}
	if got := e.WrittenAt(time.Time{}); !got.Equal(at) {
		t.Errorf("WrittenAt = %v, want the update time %v", got, at)
	}
}

func TestDecodeUpdated(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC)
	e, err := Decode("application/protobuf", eventData(t, shardDoc(8, at), shardDoc(5, at.Add(-time.Second)), []string{"count"}))
	if err != nil {
		t.Fatal(err)
	}
	if count(e.Value) != 8 || count(e.OldValue) != 5 || len(e.UpdateMask) != 1 || e.UpdateMask[0] != "count" {
		t.Errorf("updated event = %+v", e)
	}
	// The update time wins over the event time even on a whole second.
	if got := e.WrittenAt(at.Add(time.Hour)); !got.Equal(at) {
		t.Errorf("WrittenAt = %v, want %v", got, at)
	}
}

func TestDecodeDeleted(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 2, 0, time.UTC)
	e, err := Decode("application/protobuf", eventData(t, nil, shardDoc(8, at.Add(-time.Minute)), nil))
	if err != nil {
		t.Fatal(err)
	}
	if !e.Deleted() || count(e.OldValue) != 8 || e.Path() != "counters/c1/shards/3" {
		t.Errorf("deleted event = %+v", e)
	}
	if got := e.LastWrittenAt(); !got.Equal(at.Add(-time.Minute)) {
		t.Errorf("LastWrittenAt = %v, want the old document's update time %v", got, at.Add(-time.Minute))
	}
	// A delete's time is the event's; cut to the second, it is rounded up.
	if got := e.WrittenAt(at); !got.Equal(at.Add(time.Second)) {
		t.Errorf("WrittenAt(whole second) = %v, want %v", got, at.Add(time.Second))
	}
	precise := at.Add(250 * time.Millisecond)
	if got := e.WrittenAt(precise); !got.Equal(precise) {
		t.Errorf("WrittenAt(precise) = %v, want %v", got, precise)
	}
}

func TestDecodeJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 3, 5000, time.UTC)
	doc, err := protojson.Marshal(shardDoc(13, at))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"value":` + string(doc) + `,"updateMask":{"fieldPaths":["count"]}}`)
	e, err := Decode("application/json; charset=utf-8", data)
	if err != nil {
		t.Fatal(err)
	}
	if count(e.Value) != 13 || e.OldValue != nil || !e.WrittenAt(time.Time{}).Equal(at) {
		t.Errorf("JSON event = %+v", e)
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		ct   string
		data []byte
	}{
		"empty":          {"application/protobuf", nil},
		"truncated":      {"application/protobuf", []byte{0x0a, 0x10, 0x01}},
		"not a document": {"application/protobuf", protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff, 0xff})},
		"no name":        {"application/protobuf", eventData(t, &pb.Document{}, nil, nil)},
		"bad JSON":       {"application/json", []byte(`{"value":`)},
		"other type":     {"text/plain", []byte("hello")},
	} {
		if e, err := Decode(tc.ct, tc.data); err == nil {
			t.Errorf("%s: decoded %+v, want an error", name, e)
		}
	}
}

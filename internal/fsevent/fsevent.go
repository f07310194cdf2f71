// Package fsevent decodes the data of Firestore CloudEvents
// (google.cloud.firestore.document.v1.*), the google.events.cloud.firestore.v1
// DocumentEventData message, without its generated code: that code is
// published (github.com/googleapis/google-cloudevents-go), but not reachable
// from the module proxy this project builds with, so the message is walked
// by hand:
//
//	message DocumentEventData {
//	  Document     value       = 1; // the document after the write; absent on delete
//	  Document     old_value   = 2; // before the write; absent on create
//	  DocumentMask update_mask = 3;
//	}
//
// Its Document is wire-compatible with google.firestore.v1.Document, so each
// field is unmarshalled into firestorepb.Document. Eventarc sends protobuf
// (application/protobuf); the JSON form (application/json) is accepted too.
package fsevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Event is a decoded DocumentEventData.
type Event struct {
	Value      *pb.Document // nil when the document was deleted
	OldValue   *pb.Document // nil when the document was created
	UpdateMask []string
}

// Decode parses event data of the given content type.
func Decode(contentType string, data []byte) (*Event, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	var (
		e   *Event
		err error
	)
	switch mt {
	case "application/json":
		e, err = decodeJSON(data)
	case "application/protobuf", "application/x-protobuf", "":
		e, err = decodeProto(data)
	default:
		return nil, fmt.Errorf("fsevent: unsupported content type %q", contentType)
	}
	if err != nil {
		return nil, err
	}
	if e.Value == nil && e.OldValue == nil {
		return nil, errors.New("fsevent: event has neither value nor old_value")
	}
	if e.Name() == "" {
		return nil, errors.New("fsevent: document has no name")
	}
	return e, nil
}

func decodeProto(b []byte) (*Event, error) {
	e := &Event{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("fsevent: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType || num > 3 {
			// Unknown or future field: skip it, as proto decoders do.
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, fmt.Errorf("fsevent: field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, fmt.Errorf("fsevent: field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1, 2:
			doc := &pb.Document{}
			if err := proto.Unmarshal(v, doc); err != nil {
				return nil, fmt.Errorf("fsevent: field %d: %w", num, err)
			}
			if num == 1 {
				e.Value = doc
			} else {
				e.OldValue = doc
			}
		case 3:
			mask := &pb.DocumentMask{}
			if err := proto.Unmarshal(v, mask); err != nil {
				return nil, fmt.Errorf("fsevent: update_mask: %w", err)
			}
			e.UpdateMask = mask.GetFieldPaths()
		}
	}
	return e, nil
}

func decodeJSON(b []byte) (*Event, error) {
	var raw struct {
		Value      json.RawMessage `json:"value"`
		OldValue   json.RawMessage `json:"oldValue"`
		UpdateMask struct {
			FieldPaths []string `json:"fieldPaths"`
		} `json:"updateMask"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("fsevent: %w", err)
	}
	e := &Event{UpdateMask: raw.UpdateMask.FieldPaths}
	for _, f := range []struct {
		raw json.RawMessage
		dst **pb.Document
	}{{raw.Value, &e.Value}, {raw.OldValue, &e.OldValue}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		doc := &pb.Document{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(f.raw, doc); err != nil {
			return nil, fmt.Errorf("fsevent: %w", err)
		}
		*f.dst = doc
	}
	return e, nil
}

// Encode is the inverse of Decode for protobuf: the event data Eventarc
// sends for a write from old to value (either may be nil). Tools and tests
// use it to send events the way production does.
func Encode(value, old *pb.Document) ([]byte, error) {
	var b []byte
	for _, f := range []struct {
		num protowire.Number
		doc *pb.Document
	}{{1, value}, {2, old}} {
		if f.doc == nil {
			continue
		}
		m, err := proto.Marshal(f.doc)
		if err != nil {
			return nil, fmt.Errorf("fsevent: %w", err)
		}
		b = protowire.AppendTag(b, f.num, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// Name returns the full resource name of the document written,
// "projects/P/databases/D/documents/…".
func (e *Event) Name() string {
	if e.Value != nil {
		return e.Value.GetName()
	}
	return e.OldValue.GetName()
}

// Path returns the document path relative to the database, e.g.
// "counters/c1/shards/3".
func (e *Event) Path() string {
	_, path, _ := strings.Cut(e.Name(), "/documents/")
	return path
}

// Deleted reports whether the event is a delete.
func (e *Event) Deleted() bool { return e.Value == nil }

// LastWrittenAt returns, of a delete, when the deleted document was last
// written: its old value's update time, exact (zero if the event carries
// none).
func (e *Event) LastWrittenAt() time.Time {
	if e.Value != nil || e.OldValue.GetUpdateTime() == nil {
		return time.Time{}
	}
	return e.OldValue.GetUpdateTime().AsTime()
}

// WrittenAt returns a time at or after the commit of the write: the new
// document's update time, exact. A delete carries no new document, so its
// time comes from the CloudEvent's time; when that is cut to whole seconds
// (the emulator does so) the next second is returned, which is never early.
func (e *Event) WrittenAt(eventTime time.Time) time.Time {
	if e.Value != nil && e.Value.GetUpdateTime() != nil {
		return e.Value.GetUpdateTime().AsTime()
	}
	if eventTime.Nanosecond() == 0 {
		return eventTime.Add(time.Second)
	}
	return eventTime
}

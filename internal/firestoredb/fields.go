package firestoredb

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
)

// Doc is a stored document read field by field, each with its type
// checked: the first field of another type is kept, so a decoder reads
// every field and checks once (Err).
type Doc struct {
	ID      string // the last segment of its name
	Updated time.Time
	fields  map[string]*pb.Value
	err     error
}

// DocOf reads d.
func DocOf(d *pb.Document) *Doc {
	name := d.GetName()
	return &Doc{ID: name[strings.LastIndexByte(name, '/')+1:], fields: d.GetFields(), Updated: d.GetUpdateTime().AsTime()}
}

func (d *Doc) wrong(field, want string, v *pb.Value) {
	if d.err == nil {
		d.err = fmt.Errorf("field %s is not %s: %v", field, want, v)
	}
}

// Int reads an integer field (0 when missing).
func (d *Doc) Int(field string) int64 {
	v, ok := d.fields[field]
	if !ok {
		return 0
	}
	if i, ok := v.GetValueType().(*pb.Value_IntegerValue); ok {
		return i.IntegerValue
	}
	d.wrong(field, "an integer", v)
	return 0
}

// Float reads a number field (0 when missing).
func (d *Doc) Float(field string) float64 {
	switch v := d.fields[field].GetValueType().(type) {
	case nil:
		return 0
	case *pb.Value_DoubleValue:
		return v.DoubleValue
	case *pb.Value_IntegerValue:
		return float64(v.IntegerValue)
	}
	d.wrong(field, "a number", d.fields[field])
	return 0
}

// Str reads a string field ("" when missing).
func (d *Doc) Str(field string) string {
	v, ok := d.fields[field]
	if !ok {
		return ""
	}
	if s, ok := v.GetValueType().(*pb.Value_StringValue); ok {
		return s.StringValue
	}
	d.wrong(field, "a string", v)
	return ""
}

// Bool reads a boolean field (false when missing).
func (d *Doc) Bool(field string) bool {
	v, ok := d.fields[field]
	if !ok {
		return false
	}
	if b, ok := v.GetValueType().(*pb.Value_BooleanValue); ok {
		return b.BooleanValue
	}
	d.wrong(field, "a boolean", v)
	return false
}

// Time reads a timestamp field (zero when missing).
func (d *Doc) Time(field string) time.Time {
	v, ok := d.fields[field]
	if !ok {
		return time.Time{}
	}
	if t, ok := v.GetValueType().(*pb.Value_TimestampValue); ok {
		return t.TimestampValue.AsTime()
	}
	d.wrong(field, "a timestamp", v)
	return time.Time{}
}

// Bytes reads a bytes field (nil when missing).
func (d *Doc) Bytes(field string) []byte {
	v, ok := d.fields[field]
	if !ok {
		return nil
	}
	if b, ok := v.GetValueType().(*pb.Value_BytesValue); ok {
		return b.BytesValue
	}
	d.wrong(field, "bytes", v)
	return nil
}

// Strings reads an array of strings (nil when missing).
func (d *Doc) Strings(field string) []string {
	v, ok := d.fields[field]
	if !ok {
		return nil
	}
	a, ok := v.GetValueType().(*pb.Value_ArrayValue)
	if !ok {
		d.wrong(field, "an array", v)
		return nil
	}
	out := make([]string, 0, len(a.ArrayValue.GetValues()))
	for _, e := range a.ArrayValue.GetValues() {
		s, ok := e.GetValueType().(*pb.Value_StringValue)
		if !ok {
			d.wrong(field, "an array of strings", v)
			return nil
		}
		out = append(out, s.StringValue)
	}
	return out
}

// Has reports whether the document has field.
func (d *Doc) Has(field string) bool {
	_, ok := d.fields[field]
	return ok
}

// Fields are the names of the document's fields.
func (d *Doc) Fields() []string { return slices.Sorted(maps.Keys(d.fields)) }

// Map reads a map field as a document (empty when missing); its errors
// are this one's.
func (d *Doc) Map(field string) *Doc {
	s := &Doc{ID: d.ID}
	if v, ok := d.fields[field]; ok {
		if m, ok := v.GetValueType().(*pb.Value_MapValue); ok {
			s.fields = m.MapValue.GetFields()
		} else {
			d.wrong(field, "a map", v)
		}
	}
	return s
}

// Err returns the first type error of d and of subs.
func (d *Doc) Err(subs ...*Doc) error {
	for _, s := range append([]*Doc{d}, subs...) {
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

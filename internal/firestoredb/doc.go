package firestoredb

import (
	"fmt"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
)

// doc is a stored document read field by field, each with its type
// checked: the first field of another type is kept in err, so a decoder
// reads every field and checks once.
type doc struct {
	id      string
	fields  map[string]*pb.Value
	updated time.Time
	err     error
}

func docOf(d *pb.Document) *doc {
	name := d.GetName()
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			name = name[i+1:]
			break
		}
	}
	return &doc{id: name, fields: d.GetFields(), updated: d.GetUpdateTime().AsTime()}
}

func (d *doc) wrong(field, want string, v *pb.Value) {
	if d.err == nil {
		d.err = fmt.Errorf("field %s is not %s: %v", field, want, v)
	}
}

// integer reads an integer field (0 when missing).
func (d *doc) integer(field string) int64 {
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

// float reads a number field (0 when missing).
func (d *doc) float(field string) float64 {
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

// str reads a string field ("" when missing).
func (d *doc) str(field string) string {
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

// boolean reads a boolean field (false when missing).
func (d *doc) boolean(field string) bool {
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

// time reads a timestamp field (zero when missing).
func (d *doc) time(field string) time.Time {
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

// sub reads a map field as a document (empty when missing); its errors
// are this one's.
func (d *doc) sub(field string) *doc {
	s := &doc{id: d.id}
	if v, ok := d.fields[field]; ok {
		if m, ok := v.GetValueType().(*pb.Value_MapValue); ok {
			s.fields = m.MapValue.GetFields()
		} else {
			d.wrong(field, "a map", v)
		}
	}
	return s
}

// done returns the first type error of d and of subs.
func (d *doc) done(subs ...*doc) error {
	for _, s := range append([]*doc{d}, subs...) {
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

// Package indexcheck checks queries against firestore.indexes.json.
//
// The Firestore emulator runs any query without an index, so a query that
// production would reject for want of a composite index passes every local
// test. Tests build the queries with the code that runs them, derive each
// one's shape from its serialized form, and ask this package which index
// serves it.
package indexcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/proto"
)

// File is firestore.indexes.json.
type File struct {
	Indexes        []Index         `json:"indexes"`
	FieldOverrides []FieldOverride `json:"fieldOverrides"`
}

// Index is a composite index definition.
type Index struct {
	CollectionGroup string       `json:"collectionGroup"`
	QueryScope      string       `json:"queryScope"`
	Fields          []IndexField `json:"fields"`
}

// IndexField is one field of a composite index.
type IndexField struct {
	FieldPath   string `json:"fieldPath"`
	Order       string `json:"order,omitempty"`
	ArrayConfig string `json:"arrayConfig,omitempty"`
}

// FieldOverride changes the single-field indexes (or TTL) of a field.
type FieldOverride struct {
	CollectionGroup string          `json:"collectionGroup"`
	FieldPath       string          `json:"fieldPath"`
	TTL             bool            `json:"ttl,omitempty"`
	Indexes         []OverrideIndex `json:"indexes"`
}

// OverrideIndex is a single-field index kept by an override.
type OverrideIndex struct {
	Order       string `json:"order,omitempty"`
	ArrayConfig string `json:"arrayConfig,omitempty"`
	QueryScope  string `json:"queryScope"`
}

// Load reads an index file.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("indexcheck: %s: %w", path, err)
	}
	return &f, nil
}

// Order is one ordering of a query.
type Order struct {
	Field string
	Desc  bool
}

// Shape is what an index must provide for a query: the collection, the
// fields filtered by equality (== or in), those filtered by a range (<,
// <=, >, >=), and the orderings.
type Shape struct {
	Collection      string
	CollectionGroup bool
	Equality        []string
	Range           []string
	OrderBy         []Order
}

func (s Shape) String() string {
	return fmt.Sprintf("%s group=%v equality=%v range=%v orderBy=%v", s.Collection, s.CollectionGroup, s.Equality, s.Range, s.OrderBy)
}

// ShapeOf derives a query's shape from the request the client would send.
func ShapeOf(q firestore.Query) (Shape, error) {
	b, err := q.Serialize()
	if err != nil {
		return Shape{}, err
	}
	var req pb.RunQueryRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return Shape{}, err
	}
	sq := req.GetStructuredQuery()
	if len(sq.GetFrom()) != 1 {
		return Shape{}, fmt.Errorf("indexcheck: query over %d collections", len(sq.GetFrom()))
	}
	s := Shape{Collection: sq.GetFrom()[0].GetCollectionId(), CollectionGroup: sq.GetFrom()[0].GetAllDescendants()}
	if err := addFilter(&s, sq.GetWhere()); err != nil {
		return Shape{}, err
	}
	for _, o := range sq.GetOrderBy() {
		s.OrderBy = append(s.OrderBy, Order{Field: o.GetField().GetFieldPath(), Desc: o.GetDirection() == pb.StructuredQuery_DESCENDING})
	}
	return s, nil
}

func addFilter(s *Shape, f *pb.StructuredQuery_Filter) error {
	switch {
	case f == nil:
		return nil
	case f.GetCompositeFilter() != nil:
		if f.GetCompositeFilter().GetOp() != pb.StructuredQuery_CompositeFilter_AND {
			return fmt.Errorf("indexcheck: only AND filters are modelled")
		}
		for _, sub := range f.GetCompositeFilter().GetFilters() {
			if err := addFilter(s, sub); err != nil {
				return err
			}
		}
		return nil
	case f.GetFieldFilter() != nil:
		switch op := f.GetFieldFilter().GetOp(); op {
		case pb.StructuredQuery_FieldFilter_EQUAL, pb.StructuredQuery_FieldFilter_IN:
			s.Equality = append(s.Equality, f.GetFieldFilter().GetField().GetFieldPath())
			return nil
		case pb.StructuredQuery_FieldFilter_LESS_THAN, pb.StructuredQuery_FieldFilter_LESS_THAN_OR_EQUAL,
			pb.StructuredQuery_FieldFilter_GREATER_THAN, pb.StructuredQuery_FieldFilter_GREATER_THAN_OR_EQUAL:
			if field := f.GetFieldFilter().GetField().GetFieldPath(); !slices.Contains(s.Range, field) {
				s.Range = append(s.Range, field)
			}
			return nil
		default:
			return fmt.Errorf("indexcheck: filter %v is not modelled", op)
		}
	}
	return fmt.Errorf("indexcheck: filter %v is not modelled", f)
}

// SingleField reports whether the automatic single-field indexes serve s,
// so it needs no composite index: a query of one collection (not a
// collection group, whose single-field indexes are not automatic) that
// filters by equality only, ordered by nothing but the document id, or
// that filters and orders on one field alone. A field whose single-field
// indexes an override removes serves nothing.
func (f *File) SingleField(s Shape) bool {
	if s.CollectionGroup {
		return false
	}
	fields := map[string]bool{}
	for _, r := range s.Range {
		fields[r] = true
	}
	for _, o := range s.OrderBy {
		if o.Field != firestore.DocumentID {
			fields[o.Field] = true
		}
	}
	for _, e := range s.Equality {
		if f.exempt(s.Collection, e) {
			return false
		}
	}
	for field := range fields {
		if f.exempt(s.Collection, field) {
			return false
		}
	}
	switch {
	case len(fields) == 0:
		return true // equalities (merged) ordered by id
	case len(fields) == 1 && len(s.Equality) == 0:
		return len(s.OrderBy) < 2 || s.OrderBy[1].Desc == s.OrderBy[0].Desc // a second, id, ordering follows the first's direction
	}
	return false
}

// exempt reports whether an override removes field's single-field indexes.
func (f *File) exempt(collection, field string) bool {
	for _, o := range f.FieldOverrides {
		if o.CollectionGroup == collection && o.FieldPath == field && len(o.Indexes) == 0 {
			return true
		}
	}
	return false
}

// Serving returns the position of the composite index that serves s, or
// -1. An index serves s when it starts with s's equality fields (in any
// order) followed by s's orderings (a range filter's field must be the
// first of them); a final ordering on the document id is implied by the
// index, in the direction of its last field.
func (f *File) Serving(s Shape) int {
	scope := "COLLECTION"
	if s.CollectionGroup {
		scope = "COLLECTION_GROUP"
	}
	for i, ix := range f.Indexes {
		if ix.CollectionGroup == s.Collection && ix.QueryScope == scope && serves(ix.Fields, s) {
			return i
		}
	}
	return -1
}

func serves(fields []IndexField, s Shape) bool {
	if len(fields) < len(s.Equality) {
		return false
	}
	prefix := make([]string, len(s.Equality))
	for i, fl := range fields[:len(s.Equality)] {
		prefix[i] = fl.FieldPath
	}
	if !sameSet(prefix, s.Equality) {
		return false
	}
	rest := fields[len(s.Equality):]
	orders := s.OrderBy
	if n := len(orders); n > 0 && orders[n-1].Field == firestore.DocumentID {
		byName := orders[n-1]
		orders = orders[:n-1]
		if k := len(rest); k > 0 && rest[k-1].FieldPath == firestore.DocumentID {
			if (rest[k-1].Order == "DESCENDING") != byName.Desc {
				return false
			}
			rest = rest[:k-1]
		} else if k > 0 && (rest[k-1].Order == "DESCENDING") != byName.Desc {
			return false // the implied id order runs the other way
		}
	}
	if len(rest) != len(orders) {
		return false
	}
	for _, r := range s.Range {
		if len(orders) == 0 || orders[0].Field != r {
			return false // Firestore orders by the range field first
		}
	}
	for i, o := range orders {
		if rest[i].FieldPath != o.Field || (rest[i].Order == "DESCENDING") != o.Desc {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

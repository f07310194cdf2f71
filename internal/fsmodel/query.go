package fsmodel

import (
	"context"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const nameField = "__name__"

// RunQuery runs a structured query at the request's read time.
func (m *Model) RunQuery(ctx context.Context, req *pb.RunQueryRequest) ([]*pb.RunQueryResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.readTime(req.GetReadTime())
	docs, err := m.run(req.GetParent(), req.GetStructuredQuery(), at)
	if err != nil {
		return nil, err
	}
	rt := timestamppb.New(at)
	if len(docs) == 0 {
		return []*pb.RunQueryResponse{{ReadTime: rt}}, nil
	}
	out := make([]*pb.RunQueryResponse, len(docs))
	for i, d := range docs {
		out[i] = &pb.RunQueryResponse{Document: d, ReadTime: rt}
	}
	return out, nil
}

// RunAggregationQuery runs COUNT, SUM and AVG aggregations over a query,
// at the request's read time. As in Firestore, a document counts for a
// query's aggregations only if it holds every field they aggregate.
func (m *Model) RunAggregationQuery(ctx context.Context, req *pb.RunAggregationQueryRequest) ([]*pb.RunAggregationQueryResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.readTime(req.GetReadTime())
	saq := req.GetStructuredAggregationQuery()
	docs, err := m.run(req.GetParent(), saq.GetStructuredQuery(), at)
	if err != nil {
		return nil, err
	}
	var fields []string
	for _, a := range saq.GetAggregations() {
		if f := a.GetSum().GetField().GetFieldPath() + a.GetAvg().GetField().GetFieldPath(); f != "" {
			fields = append(fields, f)
		}
	}
	docs = slices.DeleteFunc(docs, func(d *pb.Document) bool {
		for _, f := range fields {
			if _, ok := lookup(d.GetFields(), f); !ok {
				return true
			}
		}
		return false
	})
	result := map[string]*pb.Value{}
	for _, a := range saq.GetAggregations() {
		switch {
		case a.GetCount() != nil:
			n := int64(len(docs))
			if up := a.GetCount().GetUpTo(); up != nil && up.GetValue() < n {
				n = up.GetValue()
			}
			result[a.GetAlias()] = intValue(n)
		case a.GetSum() != nil:
			result[a.GetAlias()] = sum(docs, a.GetSum().GetField().GetFieldPath())
		case a.GetAvg() != nil:
			result[a.GetAlias()] = avg(docs, a.GetAvg().GetField().GetFieldPath())
		}
	}
	return []*pb.RunAggregationQueryResponse{{
		Result:   &pb.AggregationResult{AggregateFields: result},
		ReadTime: timestamppb.New(at),
	}}, nil
}

// sum adds the numbers of a field: an integer while every one is an
// integer and their exact sum fits int64 (whatever the order they add in,
// as the emulator answers), a double otherwise; others are ignored.
func sum(docs []*pb.Document, field string) *pb.Value {
	exact := new(big.Int)
	var f float64
	double := false
	for _, d := range docs {
		v, _ := lookup(d.GetFields(), field)
		switch t := v.GetValueType().(type) {
		case *pb.Value_IntegerValue:
			exact.Add(exact, big.NewInt(t.IntegerValue))
			f += float64(t.IntegerValue)
		case *pb.Value_DoubleValue:
			double = true
			f += t.DoubleValue
		}
	}
	if double || !exact.IsInt64() {
		return doubleValue(f)
	}
	return intValue(exact.Int64())
}

func avg(docs []*pb.Document, field string) *pb.Value {
	var total float64
	n := 0
	for _, d := range docs {
		v, _ := lookup(d.GetFields(), field)
		switch v.GetValueType().(type) {
		case *pb.Value_IntegerValue, *pb.Value_DoubleValue:
			total += number(v)
			n++
		}
	}
	if n == 0 {
		return &pb.Value{ValueType: &pb.Value_NullValue{}}
	}
	return doubleValue(total / float64(n))
}

// run evaluates a structured query over the documents under parent as of
// at, and returns them in the query's order, projected.
func (m *Model) run(parent string, q *pb.StructuredQuery, at time.Time) ([]*pb.Document, error) {
	if len(q.GetFrom()) != 1 {
		return nil, status.Errorf(codes.InvalidArgument, "fsmodel: a query over %d collections", len(q.GetFrom()))
	}
	from := q.GetFrom()[0]
	prefix := parent + "/"
	var docs []*pb.Document
	for name := range m.docs {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		segs := strings.Split(name[len(prefix):], "/")
		if len(segs) < 2 || segs[len(segs)-2] != from.GetCollectionId() || !from.GetAllDescendants() && len(segs) != 2 {
			continue
		}
		d := m.at(name, at)
		if d == nil {
			continue
		}
		ok, err := matches(q.GetWhere(), d)
		if err != nil {
			return nil, err
		}
		if ok {
			docs = append(docs, d)
		}
	}
	orders := orderOf(q)
	docs = slices.DeleteFunc(docs, func(d *pb.Document) bool {
		for _, o := range orders {
			if _, ok := fieldOf(d, o.GetField().GetFieldPath()); !ok {
				return true // a document without an ordered field is left out
			}
		}
		return false
	})
	slices.SortFunc(docs, func(a, b *pb.Document) int { return compareBy(orders, a, b) })
	docs = slices.DeleteFunc(docs, func(d *pb.Document) bool {
		return !afterStart(q.GetStartAt(), orders, d) || !beforeEnd(q.GetEndAt(), orders, d)
	})
	if off := int(q.GetOffset()); off > 0 {
		docs = docs[min(off, len(docs)):]
	}
	if l := q.GetLimit(); l != nil && int(l.GetValue()) < len(docs) {
		docs = docs[:l.GetValue()]
	}
	out := make([]*pb.Document, len(docs))
	for i, d := range docs {
		out[i] = project(d, q.GetSelect())
	}
	return out, nil
}

// orderOf is a query's full ordering: the orderings given, an inequality
// filter's field first when none is given for it, and the document name
// last, in the direction of the last ordering.
func orderOf(q *pb.StructuredQuery) []*pb.StructuredQuery_Order {
	orders := slices.Clone(q.GetOrderBy())
	if len(orders) == 0 {
		for _, f := range inequalities(q.GetWhere()) {
			orders = append(orders, &pb.StructuredQuery_Order{Field: &pb.StructuredQuery_FieldReference{FieldPath: f}, Direction: pb.StructuredQuery_ASCENDING})
		}
	}
	dir := pb.StructuredQuery_ASCENDING
	if n := len(orders); n > 0 {
		if orders[n-1].GetField().GetFieldPath() == nameField {
			return orders
		}
		dir = orders[n-1].GetDirection()
	}
	return append(orders, &pb.StructuredQuery_Order{Field: &pb.StructuredQuery_FieldReference{FieldPath: nameField}, Direction: dir})
}

func inequalities(f *pb.StructuredQuery_Filter) []string {
	var out []string
	switch t := f.GetFilterType().(type) {
	case *pb.StructuredQuery_Filter_CompositeFilter:
		for _, sub := range t.CompositeFilter.GetFilters() {
			for _, s := range inequalities(sub) {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	case *pb.StructuredQuery_Filter_FieldFilter:
		switch t.FieldFilter.GetOp() {
		case pb.StructuredQuery_FieldFilter_LESS_THAN, pb.StructuredQuery_FieldFilter_LESS_THAN_OR_EQUAL,
			pb.StructuredQuery_FieldFilter_GREATER_THAN, pb.StructuredQuery_FieldFilter_GREATER_THAN_OR_EQUAL,
			pb.StructuredQuery_FieldFilter_NOT_EQUAL, pb.StructuredQuery_FieldFilter_NOT_IN:
			out = append(out, t.FieldFilter.GetField().GetFieldPath())
		}
	}
	return out
}

// fieldOf returns a document's value at a field path, its name for
// __name__.
func fieldOf(d *pb.Document, path string) (*pb.Value, bool) {
	if path == nameField {
		return &pb.Value{ValueType: &pb.Value_ReferenceValue{ReferenceValue: d.GetName()}}, true
	}
	return lookup(d.GetFields(), path)
}

func compareBy(orders []*pb.StructuredQuery_Order, a, b *pb.Document) int {
	for _, o := range orders {
		x, _ := fieldOf(a, o.GetField().GetFieldPath())
		y, _ := fieldOf(b, o.GetField().GetFieldPath())
		c := compare(x, y)
		if o.GetDirection() == pb.StructuredQuery_DESCENDING {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// position compares a document with a cursor's values, in the ordering's
// directions, over the values given.
func position(c *pb.Cursor, orders []*pb.StructuredQuery_Order, d *pb.Document) int {
	for i, v := range c.GetValues() {
		if i >= len(orders) {
			break
		}
		x, _ := fieldOf(d, orders[i].GetField().GetFieldPath())
		r := compare(x, v)
		if orders[i].GetDirection() == pb.StructuredQuery_DESCENDING {
			r = -r
		}
		if r != 0 {
			return r
		}
	}
	return 0
}

func afterStart(c *pb.Cursor, orders []*pb.StructuredQuery_Order, d *pb.Document) bool {
	if c == nil {
		return true
	}
	p := position(c, orders, d)
	return p > 0 || p == 0 && c.GetBefore()
}

func beforeEnd(c *pb.Cursor, orders []*pb.StructuredQuery_Order, d *pb.Document) bool {
	if c == nil {
		return true
	}
	p := position(c, orders, d)
	return p < 0 || p == 0 && !c.GetBefore()
}

// matches evaluates a query's filter on a document.
func matches(f *pb.StructuredQuery_Filter, d *pb.Document) (bool, error) {
	switch t := f.GetFilterType().(type) {
	case nil:
		return true, nil
	case *pb.StructuredQuery_Filter_CompositeFilter:
		or := t.CompositeFilter.GetOp() == pb.StructuredQuery_CompositeFilter_OR
		for _, sub := range t.CompositeFilter.GetFilters() {
			ok, err := matches(sub, d)
			if err != nil {
				return false, err
			}
			if ok == or {
				return or, nil
			}
		}
		return !or, nil
	case *pb.StructuredQuery_Filter_FieldFilter:
		return fieldMatches(t.FieldFilter, d)
	case *pb.StructuredQuery_Filter_UnaryFilter:
		v, ok := fieldOf(d, t.UnaryFilter.GetField().GetFieldPath())
		_, null := v.GetValueType().(*pb.Value_NullValue)
		nan := typeOrder(v) == 2 && math.IsNaN(number(v))
		switch t.UnaryFilter.GetOp() {
		case pb.StructuredQuery_UnaryFilter_IS_NULL:
			return ok && null, nil
		case pb.StructuredQuery_UnaryFilter_IS_NOT_NULL:
			return ok && !null, nil
		case pb.StructuredQuery_UnaryFilter_IS_NAN:
			return ok && nan, nil
		case pb.StructuredQuery_UnaryFilter_IS_NOT_NAN:
			return ok && !nan, nil
		}
	}
	return false, status.Errorf(codes.Unimplemented, "fsmodel: filter %v", f)
}

func fieldMatches(f *pb.StructuredQuery_FieldFilter, d *pb.Document) (bool, error) {
	v, ok := fieldOf(d, f.GetField().GetFieldPath())
	if !ok {
		return false, nil
	}
	want := f.GetValue()
	sameType := typeOrder(v) == typeOrder(want)
	c := compare(v, want)
	switch f.GetOp() {
	case pb.StructuredQuery_FieldFilter_EQUAL:
		return sameType && c == 0, nil
	case pb.StructuredQuery_FieldFilter_NOT_EQUAL:
		_, null := v.GetValueType().(*pb.Value_NullValue)
		return !null && !(sameType && c == 0), nil
	case pb.StructuredQuery_FieldFilter_LESS_THAN:
		return sameType && c < 0, nil
	case pb.StructuredQuery_FieldFilter_LESS_THAN_OR_EQUAL:
		return sameType && c <= 0, nil
	case pb.StructuredQuery_FieldFilter_GREATER_THAN:
		return sameType && c > 0, nil
	case pb.StructuredQuery_FieldFilter_GREATER_THAN_OR_EQUAL:
		return sameType && c >= 0, nil
	case pb.StructuredQuery_FieldFilter_IN, pb.StructuredQuery_FieldFilter_NOT_IN:
		in := false
		for _, w := range want.GetArrayValue().GetValues() {
			if typeOrder(v) == typeOrder(w) && compare(v, w) == 0 {
				in = true
			}
		}
		return in == (f.GetOp() == pb.StructuredQuery_FieldFilter_IN), nil
	}
	return false, status.Errorf(codes.Unimplemented, "fsmodel: operator %v", f.GetOp())
}

// project keeps a document's selected fields (all without a selection).
func project(d *pb.Document, sel *pb.StructuredQuery_Projection) *pb.Document {
	out := proto.Clone(d).(*pb.Document)
	if sel == nil {
		return out
	}
	out.Fields = map[string]*pb.Value{}
	for _, f := range sel.GetFields() {
		if v, ok := lookup(d.GetFields(), f.GetFieldPath()); ok {
			setPath(out.Fields, f.GetFieldPath(), proto.Clone(v).(*pb.Value))
		}
	}
	return out
}

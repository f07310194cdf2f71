// Package fsmodel is a model of Firestore for tests: the five calls of
// firestoredb.Firestore, in memory, with Firestore's semantics as the
// functions rely on them: atomic commits with exists and update-time
// preconditions, update masks and transforms (increment, server time),
// versions kept per document so reads, queries and aggregations run at a
// read time, and commit times that only go forward on the model's clock.
//
// The model is only as good as its differential test (diff_test.go):
// random operation sequences against it and the real emulator must give the
// same documents, results and error codes. The simulation of the whole
// service (internal/sim) runs on it.
package fsmodel

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Model is an in-memory Firestore database. It is safe for concurrent use.
type Model struct {
	// Now is the model's clock; commit times follow it, a microsecond
	// apart at least, as Firestore's are. Nil: time.Now.
	Now func() time.Time
	// OnCommit, when set, is told every successful commit, once the model
	// is unlocked: its time and the documents it changed, before and after
	// (nil: absent). The simulation turns the shards' changes into trigger
	// events and checks its invariants there.
	OnCommit func(at time.Time, changes []Change)

	mu   sync.Mutex
	last time.Time            // of the last commit
	read time.Time            // of the last read that read now
	docs map[string][]version // by full name, oldest first
}

// Change is one document a commit changed.
type Change struct {
	Name          string
	Before, After *pb.Document
}

// version is a document as of a commit; doc is nil once deleted.
type version struct {
	at  time.Time
	doc *pb.Document
}

// New returns an empty model on clock now (nil: time.Now).
func New(now func() time.Time) *Model {
	return &Model{Now: now, docs: map[string][]version{}}
}

func (m *Model) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// readTime is the time a read without one reads at: now, and never before
// the last commit. A commit after it gets a later time (m.read), as in
// Firestore: a read at that time never sees a commit made after it.
func (m *Model) readTime(sel *timestamppb.Timestamp) time.Time {
	if sel != nil {
		return sel.AsTime()
	}
	t := m.now().Truncate(time.Microsecond)
	if t.Before(m.last) {
		t = m.last
	}
	if t.After(m.read) {
		m.read = t
	}
	return t
}

// MaxRequest is the largest commit request the emulator takes (its gRPC
// limit; production Firestore takes 10 MiB). Neither limits the number of
// writes of a commit.
const MaxRequest = 4 << 20

// at returns document name as of t (nil: absent).
func (m *Model) at(name string, t time.Time) *pb.Document {
	vs := m.docs[name]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].at.After(t) })
	if i == 0 {
		return nil
	}
	return vs[i-1].doc
}

// current returns document name now (nil: absent).
func (m *Model) current(name string) *pb.Document {
	vs := m.docs[name]
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1].doc
}

// Commit applies the writes atomically, or none of them.
func (m *Model) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	changes, resp, err := m.commit(req)
	if err == nil && m.OnCommit != nil && len(changes) > 0 {
		m.OnCommit(resp.GetCommitTime().AsTime(), changes) // unlocked: it may read the model
	}
	return resp, err
}

func (m *Model) commit(req *pb.CommitRequest) ([]Change, *pb.CommitResponse, error) {
	if n := proto.Size(req); n > MaxRequest {
		return nil, nil, status.Errorf(codes.ResourceExhausted, "gRPC message exceeds maximum size %d: %d", MaxRequest, n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.now().Truncate(time.Microsecond)
	if after := maxTime(m.last, m.read); !at.After(after) {
		at = after.Add(time.Microsecond)
	}
	work := map[string]*pb.Document{} // the documents as the writes so far leave them
	var order, written []string       // the documents, in the writes' order
	get := func(name string) *pb.Document {
		if d, ok := work[name]; ok {
			return d
		}
		return m.current(name)
	}
	resp := &pb.CommitResponse{CommitTime: timestamppb.New(at)}
	for _, w := range req.GetWrites() {
		name := w.GetDelete()
		if u := w.GetUpdate(); u != nil {
			name = u.GetName()
		}
		// The functions never write a document twice in one commit; how
		// Firestore collapses such writes (some refused, depending on
		// their order and preconditions) is not modelled.
		if _, again := work[name]; again {
			return nil, nil, status.Errorf(codes.Unimplemented, "fsmodel: two writes of %s in one commit", name)
		}
		cur := get(name)
		if err := checkPrecondition(w.GetCurrentDocument(), cur, m.stored(name), w.GetDelete() != "", name); err != nil {
			return nil, nil, err
		}
		var next *pb.Document
		var results []*pb.Value
		if w.GetDelete() == "" {
			var err error
			if next, err = apply(w, cur, at); err != nil {
				return nil, nil, err
			}
			if results, err = transform(next, w.GetUpdateTransforms(), at); err != nil {
				return nil, nil, err
			}
		}
		order = append(order, name)
		work[name] = next
		written = append(written, name)
		resp.WriteResults = append(resp.WriteResults, &pb.WriteResult{TransformResults: results})
	}
	// The versions: a document whose content changed gets one at the
	// commit's time; an unchanged one keeps its update time.
	var changes []Change
	updated := map[string]*timestamppb.Timestamp{}
	for _, name := range order {
		before, after := m.current(name), work[name]
		if sameContent(before, after) {
			updated[name] = before.GetUpdateTime()
			continue
		}
		if after != nil {
			after.UpdateTime = timestamppb.New(at)
			after.CreateTime = timestamppb.New(at)
			if before != nil {
				after.CreateTime = before.GetCreateTime()
			}
			updated[name] = after.GetUpdateTime()
		}
		m.docs[name] = append(m.docs[name], version{at: at, doc: after})
		changes = append(changes, Change{Name: name, Before: before, After: after})
	}
	for i, name := range written {
		resp.WriteResults[i].UpdateTime = updated[name]
	}
	m.last = at
	return changes, resp, nil
}

// stored is the time of a document's last version, its deletion's when
// it was deleted; zero if it never existed.
func (m *Model) stored(name string) time.Time {
	vs := m.docs[name]
	if len(vs) == 0 {
		return time.Time{}
	}
	return vs[len(vs)-1].at
}

// checkPrecondition checks a write's precondition against the document
// (nil: absent) and the time of its last version, as the emulator does: a
// version that is not the stored one fails, one later than an existing
// document's is refused as invalid, and the version of a deletion names no
// document to update (and one to delete again).
func checkPrecondition(p *pb.Precondition, cur *pb.Document, stored time.Time, deletes bool, name string) error {
	switch c := p.GetConditionType().(type) {
	case *pb.Precondition_Exists:
		if c.Exists && cur == nil {
			return status.Errorf(codes.NotFound, "no entity to update: %s", name)
		}
		if !c.Exists && cur != nil {
			return status.Errorf(codes.AlreadyExists, "entity already exists: %s", name)
		}
	case *pb.Precondition_UpdateTime:
		switch want := c.UpdateTime.AsTime(); {
		case cur != nil && want.After(stored):
			return status.Errorf(codes.InvalidArgument, "invalid base version, it is greater than the stored version: %s", name)
		case cur == nil && !stored.IsZero() && want.Equal(stored):
			if deletes {
				return nil // deleting it again changes nothing
			}
			return status.Errorf(codes.NotFound, "no entity to update: %s", name)
		case !want.Equal(stored) || cur == nil:
			return status.Errorf(codes.FailedPrecondition, "the stored version does not match the required base version: %s", name)
		}
	}
	return nil
}

// apply returns the document an update write leaves, before transforms:
// the write's fields replace the document's, or with a mask, the masked
// field paths take the write's value or go.
func apply(w *pb.Write, cur *pb.Document, at time.Time) (*pb.Document, error) {
	u := w.GetUpdate()
	next := &pb.Document{Name: u.GetName(), Fields: map[string]*pb.Value{}}
	if w.GetUpdateMask() == nil {
		for k, v := range u.GetFields() {
			next.Fields[k] = stored(v)
		}
		return next, nil
	}
	if cur != nil {
		for k, v := range cur.GetFields() {
			next.Fields[k] = proto.Clone(v).(*pb.Value)
		}
	}
	for _, path := range w.GetUpdateMask().GetFieldPaths() {
		v, ok := lookup(u.GetFields(), path)
		if ok {
			setPath(next.Fields, path, stored(v))
		} else {
			deletePath(next.Fields, path)
		}
	}
	return next, nil
}

// stored is a copy of a written value as Firestore keeps it: timestamps
// to the microsecond, rounded down.
func stored(v *pb.Value) *pb.Value {
	c := proto.Clone(v).(*pb.Value)
	var walk func(v *pb.Value)
	walk = func(v *pb.Value) {
		switch x := v.GetValueType().(type) {
		case *pb.Value_TimestampValue:
			x.TimestampValue.Nanos -= x.TimestampValue.Nanos % 1000
		case *pb.Value_MapValue:
			for _, f := range x.MapValue.GetFields() {
				walk(f)
			}
		case *pb.Value_ArrayValue:
			for _, e := range x.ArrayValue.GetValues() {
				walk(e)
			}
		}
	}
	walk(c)
	return c
}

func splitPath(path string) []string { return strings.Split(path, ".") }

// lookup returns the value at a dotted field path.
func lookup(fields map[string]*pb.Value, path string) (*pb.Value, bool) {
	parts := splitPath(path)
	for i, p := range parts {
		v, ok := fields[p]
		if !ok {
			return nil, false
		}
		if i == len(parts)-1 {
			return v, true
		}
		mv := v.GetMapValue()
		if mv == nil {
			return nil, false
		}
		fields = mv.GetFields()
	}
	return nil, false
}

func setPath(fields map[string]*pb.Value, path string, v *pb.Value) {
	parts := splitPath(path)
	for _, p := range parts[:len(parts)-1] {
		mv := fields[p].GetMapValue()
		if mv == nil {
			mv = &pb.MapValue{Fields: map[string]*pb.Value{}}
			fields[p] = &pb.Value{ValueType: &pb.Value_MapValue{MapValue: mv}}
		}
		if mv.Fields == nil {
			mv.Fields = map[string]*pb.Value{}
		}
		fields = mv.Fields
	}
	fields[parts[len(parts)-1]] = v
}

func deletePath(fields map[string]*pb.Value, path string) {
	parts := splitPath(path)
	for _, p := range parts[:len(parts)-1] {
		mv := fields[p].GetMapValue()
		if mv == nil {
			return
		}
		fields = mv.GetFields()
	}
	delete(fields, parts[len(parts)-1])
}

// sameContent reports whether two versions of a document hold the same
// fields (both absent, or both present and equal).
func sameContent(a, b *pb.Document) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return proto.Equal(&pb.MapValue{Fields: a.GetFields()}, &pb.MapValue{Fields: b.GetFields()})
}

// BatchGetDocuments reads documents at the request's read time.
func (m *Model) BatchGetDocuments(ctx context.Context, req *pb.BatchGetDocumentsRequest) ([]*pb.BatchGetDocumentsResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.readTime(req.GetReadTime())
	var out []*pb.BatchGetDocumentsResponse
	seen := map[string]bool{}
	for _, name := range req.GetDocuments() {
		if seen[name] {
			continue // one answer per document
		}
		seen[name] = true
		r := &pb.BatchGetDocumentsResponse{ReadTime: timestamppb.New(at)}
		if d := m.at(name, at); d != nil {
			r.Result = &pb.BatchGetDocumentsResponse_Found{Found: proto.Clone(d).(*pb.Document)}
		} else {
			r.Result = &pb.BatchGetDocumentsResponse_Missing{Missing: name}
		}
		out = append(out, r)
	}
	return out, nil
}

// ListCollectionIds lists the collections that hold a document under the
// document parent, directly or deeper.
func (m *Model) ListCollectionIds(ctx context.Context, req *pb.ListCollectionIdsRequest) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := req.GetParent() + "/"
	ids := map[string]bool{}
	for name := range m.docs {
		if strings.HasPrefix(name, prefix) && m.current(name) != nil {
			id, _, _ := strings.Cut(name[len(prefix):], "/")
			ids[id] = true
		}
	}
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// Documents returns the documents whose names start with prefix, as of t
// (zero: now), sorted by name: what the simulation's invariants look at.
func (m *Model) Documents(prefix string, t time.Time) []*pb.Document {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*pb.Document
	for name := range m.docs {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		d := m.current(name)
		if !t.IsZero() {
			d = m.at(name, t)
		}
		if d != nil {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

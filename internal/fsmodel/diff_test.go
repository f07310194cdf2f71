package fsmodel_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// The differential test: random sequences of the calls the functions make
// (commits of creates, updates with masks, increments, server times and
// deletes, with every kind of precondition; reads, queries and
// aggregations, now and at a past read time; collection listings) run
// against the model and the real emulator, and must give the same
// documents, results and error codes. Times differ between the two, so
// each is named by the commit that made it: the k-th successful commit's
// time is C<k> in both worlds, and a precondition or a read time that
// names C<k> uses each world's own.
//
//	go test ./internal/fsmodel -run TestModelMatchesTheEmulator -diffseed 7 -v
var (
	diffSeeds = flag.Int("diffseeds", 40, "random sequences TestModelMatchesTheEmulator runs")
	diffSeed  = flag.Uint64("diffseed", 0, "replay only this sequence")
)

// world is one Firestore behind the interface: the emulator or the model.
type world struct {
	name    string
	api     firestoredb.Firestore
	root    string      // "projects/P/databases/(default)/documents"
	commits []time.Time // the time of each successful commit
}

func (w *world) time(sym int) *timestamppb.Timestamp {
	if sym < 0 || sym >= len(w.commits) {
		return timestamppb.New(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)) // a version that never was
	}
	return timestamppb.New(w.commits[sym])
}

// norm names a time by the commit it is: C<k>, or "now" for a read time
// after the last commit.
func (w *world) norm(t *timestamppb.Timestamp, readTime bool) string {
	if t == nil {
		return "-"
	}
	for i, c := range w.commits {
		if t.AsTime().Equal(c) {
			return fmt.Sprintf("C%d", i)
		}
	}
	if readTime && (len(w.commits) == 0 || t.AsTime().After(w.commits[len(w.commits)-1])) {
		return "now"
	}
	return "T?" + t.AsTime().Format(time.RFC3339Nano)
}

func (w *world) value(v *pb.Value) string {
	switch t := v.GetValueType().(type) {
	case *pb.Value_TimestampValue:
		// Only server times are stored: the request's time, to the
		// millisecond, near its commit's (usually a few ms before; on a
		// loaded machine, a CI run's, a 20 ms window once failed).
		for _, c := range w.commits {
			if d := c.Sub(t.TimestampValue.AsTime()); d > -2*time.Second && d < 2*time.Second {
				return "~C"
			}
		}
		return "T?" + t.TimestampValue.AsTime().Format(time.RFC3339Nano)
	case *pb.Value_MapValue:
		return w.fields(t.MapValue.GetFields())
	case *pb.Value_ReferenceValue:
		return "ref:" + strings.TrimPrefix(t.ReferenceValue, w.root+"/")
	case *pb.Value_IntegerValue:
		return fmt.Sprintf("int:%d", t.IntegerValue)
	case *pb.Value_DoubleValue:
		return fmt.Sprintf("double:%g", t.DoubleValue)
	case *pb.Value_StringValue:
		return fmt.Sprintf("str:%q", t.StringValue)
	case *pb.Value_NullValue:
		return "null"
	case *pb.Value_BooleanValue:
		return fmt.Sprintf("bool:%v", t.BooleanValue)
	}
	return fmt.Sprintf("%T", v.GetValueType())
}

func (w *world) fields(f map[string]*pb.Value) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s ", k, w.value(f[k]))
	}
	b.WriteString("}")
	return b.String()
}

func (w *world) doc(d *pb.Document) string {
	if d == nil {
		return "<missing>"
	}
	return fmt.Sprintf("%s %s created %s updated %s", strings.TrimPrefix(d.GetName(), w.root+"/"), w.fields(d.GetFields()),
		w.norm(d.GetCreateTime(), false), w.norm(d.GetUpdateTime(), false))
}

func (w *world) full(path string) string { return w.root + "/" + path }
func (w *world) database() string        { return strings.TrimSuffix(w.root, "/documents") }

// commitOf runs a commit of writes built for w, and says what it did: its
// time, and each write's update time and transforms' results.
func (w *world) commitOf(writes []*pb.Write) string {
	resp, err := w.api.Commit(context.Background(), &pb.CommitRequest{Database: w.database(), Writes: writes})
	if err != nil {
		return errCode(err)
	}
	w.commits = append(w.commits, resp.GetCommitTime().AsTime())
	var b strings.Builder
	fmt.Fprintf(&b, "ok at %s:", w.norm(resp.GetCommitTime(), false))
	for _, res := range resp.GetWriteResults() {
		fmt.Fprintf(&b, " [updated %s", w.norm(res.GetUpdateTime(), false))
		for _, v := range res.GetTransformResults() {
			fmt.Fprintf(&b, " %s", w.value(v))
		}
		b.WriteString("]")
	}
	return b.String()
}

// getAt reads documents paths in w at the sym-th commit's time (now: -1).
func (w *world) getAt(paths []string, sym int) ([]*pb.BatchGetDocumentsResponse, error) {
	req := &pb.BatchGetDocumentsRequest{Database: w.database()}
	for _, p := range paths {
		req.Documents = append(req.Documents, w.full(p))
	}
	if sym >= 0 {
		req.ConsistencySelector = &pb.BatchGetDocumentsRequest_ReadTime{ReadTime: w.time(sym)}
	}
	return w.api.BatchGetDocuments(context.Background(), req)
}

func errCode(err error) string {
	lastErr = err.Error()
	return "error " + status.Code(err).String()
}

// lastErr is the message of the last error, for a failure's report.
var lastErr string

// op is one call, built for a world from the sequence's random choices.
type op struct {
	what string
	run  func(w *world) string
}

// universe is the documents and fields the sequences play with.
var (
	topDocs   = []string{"c/a", "c/b", "c/c"}
	subDocs   = []string{"c/a/s/0", "c/a/s/1", "c/a/s/2", "c/b/s/0"}
	allDocs   = append(slices.Clone(topDocs), subDocs...)
	intFields = []string{"n", "m", "x.y", "x.z"} // x is a map, as a choice counter's counts are
)

// sumFields are what an aggregation sums: a shard's count, and a choice's
// by its dotted path (a strong read of a choice counter sums each alone).
var sumFields = [][]string{{"n"}, {"n", "m"}, {"x.y"}, {"x.z"}, {"n", "x.y"}}

func randInt(r *rand.Rand) int64 {
	switch r.IntN(8) {
	case 0:
		return math.MaxInt64 - int64(r.IntN(3))
	case 1:
		return math.MinInt64 + int64(r.IntN(3))
	}
	return int64(r.IntN(21) - 10)
}

func intV(n int64) *pb.Value { return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: n}} }

// randomWrite builds one write of a commit, and says what it is.
func randomWrite(r *rand.Rand, name string, commits int) (func(w *world) *pb.Write, string) {
	full := func(w *world) string { return w.root + "/" + name }
	fields := map[string]*pb.Value{}
	for _, f := range intFields[:2] {
		if r.IntN(2) == 0 {
			fields[f] = intV(randInt(r))
		}
	}
	if r.IntN(2) == 0 {
		fields["s"] = &pb.Value{ValueType: &pb.Value_StringValue{StringValue: fmt.Sprint("v", r.IntN(3))}}
	}
	switch r.IntN(6) {
	case 0:
		fields["x"] = &pb.Value{ValueType: &pb.Value_MapValue{MapValue: &pb.MapValue{Fields: map[string]*pb.Value{"y": intV(randInt(r))}}}}
	case 1:
		// An empty map, as a choice counter's document is created with
		// counts: {}.
		fields["x"] = &pb.Value{ValueType: &pb.Value_MapValue{MapValue: &pb.MapValue{}}}
	}
	if r.IntN(2) == 0 {
		// A time the client writes, to the nanosecond: kept to the
		// microsecond.
		fields["w"] = &pb.Value{ValueType: &pb.Value_TimestampValue{TimestampValue: &timestamppb.Timestamp{
			Seconds: 1_800_000_000 + r.Int64N(5), Nanos: r.Int32N(1_000_000_000)}}}
	}
	var mask []string
	if r.IntN(2) == 0 {
		// x whole: the map the write holds replaces the document's, as the
		// roll-up writes a choice counter's counts.
		for _, f := range append(slices.Clone(intFields), "s", "x") {
			if r.IntN(3) == 0 {
				mask = append(mask, f)
			}
		}
		if mask == nil {
			mask = []string{} // an empty mask: only transforms
		}
	}
	var transforms []*pb.DocumentTransform_FieldTransform
	for _, f := range intFields {
		if r.IntN(4) == 0 {
			transforms = append(transforms, &pb.DocumentTransform_FieldTransform{FieldPath: f,
				TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: intV(randInt(r))}})
		}
	}
	if r.IntN(5) == 0 {
		transforms = append(transforms, &pb.DocumentTransform_FieldTransform{FieldPath: "t",
			TransformType: &pb.DocumentTransform_FieldTransform_SetToServerValue{SetToServerValue: pb.DocumentTransform_FieldTransform_REQUEST_TIME}})
	}
	kind := r.IntN(6)
	pre := r.IntN(5)
	sym := r.IntN(commits+2) - 1
	var ts []string
	for _, t := range transforms {
		ts = append(ts, t.GetFieldPath())
	}
	what := fmt.Sprintf("%s: update fields %v mask %v transforms %v", name, slices.Sorted(maps.Keys(fields)), mask, ts)
	if kind == 0 {
		what = name + ": delete"
	}
	what += fmt.Sprint(" precondition ", []string{"none", "exists", "missing", "version", "version"}[pre])
	if pre >= 3 {
		what += fmt.Sprint(" C", sym)
	}
	if slices.Contains(ts, "t") && kind != 0 {
		what += " (a server time)"
	}
	return func(w *world) *pb.Write {
		var wr *pb.Write
		if kind == 0 {
			wr = &pb.Write{Operation: &pb.Write_Delete{Delete: full(w)}}
		} else {
			wr = &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{Name: full(w), Fields: fields}}, UpdateTransforms: transforms}
			if mask != nil {
				wr.UpdateMask = &pb.DocumentMask{FieldPaths: mask}
			}
		}
		switch pre {
		case 1:
			wr.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: true}}
		case 2:
			wr.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}}
		case 3, 4:
			wr.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: w.time(sym)}}
		}
		return wr
	}, what
}

// randomOp builds the next call of a sequence that made commits commits
// so far.
func randomOp(r *rand.Rand, commits int) op {
	switch r.IntN(10) {
	case 0, 1, 2, 3, 4:
		n := 1 + r.IntN(3)
		var names []string
		for range n {
			names = append(names, allDocs[r.IntN(len(allDocs))])
		}
		// Distinct documents: the functions never write one twice in a
		// commit, and the model refuses it (Commit says why).
		slices.Sort(names)
		names = slices.Compact(names)
		var writes []func(*world) *pb.Write
		var whats []string
		for _, name := range names {
			mk, what := randomWrite(r, name, commits)
			writes, whats = append(writes, mk), append(whats, what)
		}
		serverTime := strings.Contains(strings.Join(whats, ";"), "(a server time)")
		return op{"commit [" + strings.Join(whats, "; ") + "]", func(w *world) string {
			if serverTime {
				// A server time to the millisecond equal to the one stored
				// changes nothing: let each world's clock pass a
				// millisecond, so both store a new one.
				time.Sleep(2 * time.Millisecond)
			}
			var built []*pb.Write
			for _, mk := range writes {
				built = append(built, mk(w))
			}
			return w.commitOf(built)
		}}
	case 5:
		names := []string{allDocs[r.IntN(len(allDocs))], allDocs[r.IntN(len(allDocs))]}
		sym := r.IntN(commits+1) - 1 // -1: now
		return op{fmt.Sprintf("get %v at %d", names, sym), func(w *world) string {
			resps, err := w.getAt(names, sym)
			if err != nil {
				return errCode(err)
			}
			var out []string
			for _, res := range resps {
				d := w.doc(res.GetFound())
				if res.GetFound() == nil {
					d = "missing " + strings.TrimPrefix(res.GetMissing(), w.root+"/")
				}
				out = append(out, d+" read "+w.norm(res.GetReadTime(), true))
			}
			sort.Strings(out) // the emulator answers in its own order
			return strings.Join(out, "; ")
		}}
	case 6, 7:
		return randomQuery(r, commits)
	case 8:
		coll := []string{"c/a/s", "c/b/s", "c"}[r.IntN(3)]
		sym := r.IntN(commits+1) - 1
		fields := sumFields[r.IntN(len(sumFields))]
		count := r.IntN(2) == 0
		// A filtered one, as a rolling window sums a counter's minutes
		// from a start on.
		filtered, from := r.IntN(2) == 0, int64(r.IntN(7)-3)
		return op{fmt.Sprintf("aggregate %s %v count %v at %d filtered %v from %d", coll, fields, count, sym, filtered, from), func(w *world) string {
			parent, id := w.root, coll
			if i := strings.LastIndex(coll, "/"); i >= 0 {
				parent, id = w.root+"/"+coll[:i], coll[i+1:]
			}
			var aggs []*pb.StructuredAggregationQuery_Aggregation
			for i, f := range fields {
				aggs = append(aggs, &pb.StructuredAggregationQuery_Aggregation{Alias: fmt.Sprint("s", i),
					Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{
						Field: &pb.StructuredQuery_FieldReference{FieldPath: f}}}})
			}
			if count {
				aggs = append(aggs, &pb.StructuredAggregationQuery_Aggregation{Alias: "n",
					Operator: &pb.StructuredAggregationQuery_Aggregation_Count_{Count: &pb.StructuredAggregationQuery_Aggregation_Count{}}})
			}
			sq := &pb.StructuredQuery{From: []*pb.StructuredQuery_CollectionSelector{{CollectionId: id}}}
			if filtered {
				sq.Where = &pb.StructuredQuery_Filter{FilterType: &pb.StructuredQuery_Filter_FieldFilter{FieldFilter: &pb.StructuredQuery_FieldFilter{
					Field: &pb.StructuredQuery_FieldReference{FieldPath: "n"}, Op: pb.StructuredQuery_FieldFilter_GREATER_THAN_OR_EQUAL, Value: intV(from)}}}
				sq.OrderBy = []*pb.StructuredQuery_Order{{Field: &pb.StructuredQuery_FieldReference{FieldPath: "n"}, Direction: pb.StructuredQuery_ASCENDING}}
			}
			req := &pb.RunAggregationQueryRequest{Parent: parent, QueryType: &pb.RunAggregationQueryRequest_StructuredAggregationQuery{
				StructuredAggregationQuery: &pb.StructuredAggregationQuery{
					QueryType:    &pb.StructuredAggregationQuery_StructuredQuery{StructuredQuery: sq},
					Aggregations: aggs}}}
			if sym >= 0 {
				req.ConsistencySelector = &pb.RunAggregationQueryRequest_ReadTime{ReadTime: w.time(sym)}
			}
			resps, err := w.api.RunAggregationQuery(context.Background(), req)
			if err != nil {
				return errCode(err)
			}
			var out []string
			for _, res := range resps {
				if res.GetResult() != nil {
					out = append(out, w.fields(res.GetResult().GetAggregateFields()))
				}
				out = append(out, "read "+w.norm(res.GetReadTime(), true))
			}
			return strings.Join(out, " ")
		}}
	}
	parent := []string{"c/a", "c/b", "c/c", "c/a/s/0"}[r.IntN(4)]
	return op{"collections of " + parent, func(w *world) string {
		ids, err := w.api.ListCollectionIds(context.Background(), &pb.ListCollectionIdsRequest{Parent: w.root + "/" + parent})
		if err != nil {
			return errCode(err)
		}
		sort.Strings(ids)
		return fmt.Sprint(ids)
	}}
}

// randomQuery builds a query of the shapes the functions issue: a page of
// a collection by id with a cursor and a selection, a range or equality
// filter with an ordering, a collection group, the activity index's (an
// "in" filter, a time range, two orderings and a cursor of a time and an
// id), a ranking's (an equality, a range, descending, ties by a second
// field that a document must hold to be ranked), a reader's memberships of
// a page (a collection group, an equality and an "in" filter), a user's
// memberships for an erasure (a collection group, an equality, newest
// first by a time and then by path, from a cursor of both), the erasures
// recorded since a time.
func randomQuery(r *rand.Rand, commits int) op {
	shape := r.IntN(9)
	w0 := time.Unix(1_800_000_000+r.Int64N(6), 0)
	cursor := time.Unix(1_800_000_000+r.Int64N(5), r.Int64N(1_000_000_000))
	in := []any{"v0", "v1", "v2"}[:1+r.IntN(3)]
	coll := []string{"c", "c/a/s"}[r.IntN(2)]
	limit := 1 + r.IntN(4)
	v := int64(r.IntN(7) - 3)
	after := allDocs[r.IntN(len(allDocs))]
	sym := r.IntN(commits+1) - 1
	return op{fmt.Sprintf("query %d on %s limit %d v %d after %s at %d in %v w %s cursor %s", shape, coll, limit, v, after, sym, in, w0, cursor), func(w *world) string {
		c, _ := firestore.NewClient(context.Background(), "unused") // builds the query only
		defer c.Close()
		var q firestore.Query
		switch shape {
		case 0:
			q = c.Collection(coll).Select("n").OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
			if r := strings.Split(after, "/"); strings.HasPrefix(after, coll+"/") && len(r) == strings.Count(coll, "/")+2 {
				q = q.StartAfter(r[len(r)-1])
			}
		case 1:
			q = c.Collection(coll).Where("n", ">", v).OrderBy("n", firestore.Desc).Limit(limit)
		case 2:
			q = c.Collection(coll).Where("n", "==", v).Where("m", ">=", v).OrderBy("m", firestore.Asc)
		case 3:
			q = c.CollectionGroup("s").Where("n", ">", v).OrderBy("n", firestore.Asc).OrderBy(firestore.DocumentID, firestore.Desc)
		case 4:
			q = c.Collection(coll).Where("s", "in", in).Where("w", "<=", w0).OrderBy("w", firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
			if r := strings.Split(after, "/"); strings.HasPrefix(after, coll+"/") && len(r) == strings.Count(coll, "/")+2 {
				q = q.StartAfter(cursor, r[len(r)-1])
			} else {
				q = q.Where("w", ">=", cursor)
			}
		case 5:
			q = c.Collection(coll).Where("s", "==", in[len(in)-1]).Where("n", ">", v).OrderBy("n", firestore.Desc).OrderBy("m", firestore.Asc).Limit(limit)
		case 6:
			q = c.CollectionGroup("s").Where("n", "==", v).Where("s", "in", in)
		case 7:
			q = c.CollectionGroup("s").Where("s", "==", in[len(in)-1]).OrderBy("w", firestore.Desc).OrderBy(firestore.DocumentID, firestore.Desc)
			if strings.Contains(after, "/s/") {
				q = q.StartAfter(cursor, c.Doc(after))
			}
			q = q.Limit(limit)
		default:
			q = c.Collection(coll).Where("w", ">", cursor)
		}
		req, err := queryRequest(q, w.root)
		if err != nil {
			return "build: " + err.Error()
		}
		if sym >= 0 {
			req.ConsistencySelector = &pb.RunQueryRequest_ReadTime{ReadTime: w.time(sym)}
		}
		resps, err := w.api.RunQuery(context.Background(), req)
		if err != nil {
			return errCode(err)
		}
		var out []string
		for _, res := range resps {
			if res.GetDocument() != nil {
				out = append(out, w.doc(res.GetDocument()))
			}
		}
		return strings.Join(out, "; ")
	}}
}

func TestModelMatchesTheEmulator(t *testing.T) {
	host, err := testenv.EmulatorHost()
	testenv.NeedEmulators(t, err)
	seeds := []uint64{*diffSeed}
	if *diffSeed == 0 {
		seeds = nil
		for i := range *diffSeeds {
			seeds = append(seeds, uint64(i+1))
		}
	}
	for _, seed := range seeds {
		project := testenv.NewProjectID("fsmodel")
		db, err := firestoredb.Open(context.Background(), project, firestoredb.DefaultDatabase, host)
		if err != nil {
			t.Fatal(err)
		}
		root := "projects/" + project + "/databases/(default)/documents"
		emulator := &world{name: "emulator", api: db.API(), root: root}
		model := &world{name: "model", api: fsmodel.New(nil), root: root}
		r := rand.New(rand.NewPCG(seed, 7))
		var trace []string
		for step := range 60 {
			o := randomOp(r, len(emulator.commits))
			lastErr = ""
			got := o.run(model)
			modelErr := lastErr
			want := o.run(emulator)
			trace = append(trace, fmt.Sprintf("%d %s\n   emulator: %s", step, o.what, want))
			if got != want {
				t.Errorf("seed %d (replay: go test ./internal/fsmodel -run TestModelMatchesTheEmulator -diffseed %d -v), step %d, %s:\n  model:    %s %s\n  emulator: %s %s\n%s",
					seed, seed, step, o.what, got, modelErr, want, lastErr, strings.Join(trace, "\n"))
				break
			}
		}
		db.Close()
		if *diffSeed != 0 {
			t.Logf("trace:\n%s", strings.Join(trace, "\n"))
		}
	}
}

// queryRequest is the RunQueryRequest of q, under root.
func queryRequest(q firestore.Query, root string) (*pb.RunQueryRequest, error) {
	b, err := q.Serialize()
	if err != nil {
		return nil, err
	}
	var req pb.RunQueryRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, err
	}
	// The client built the names under its own project: move them under
	// root, cursors included.
	req.Parent = root + strings.TrimPrefix(req.Parent, "projects/unused/databases/(default)/documents")
	for _, c := range []*pb.Cursor{req.GetStructuredQuery().GetStartAt(), req.GetStructuredQuery().GetEndAt()} {
		for _, v := range c.GetValues() {
			if ref, ok := v.GetValueType().(*pb.Value_ReferenceValue); ok {
				ref.ReferenceValue = root + strings.TrimPrefix(ref.ReferenceValue, "projects/unused/databases/(default)/documents")
			}
		}
	}
	return &req, nil
}

// TestConcurrentCallersMatchTheEmulator: callers at once, as instances
// are, on one document: of creations, one succeeds; of updates on the
// version they read, one; increments all add up. The model and the
// emulator answer alike.
func TestConcurrentCallersMatchTheEmulator(t *testing.T) {
	db, project := emulatorDB(t)
	root := "projects/" + project + "/databases/(default)/documents"
	const callers = 8
	for _, api := range []firestoredb.Firestore{db.API(), fsmodel.New(nil)} {
		name := root + "/race/" + fmt.Sprint(time.Now().UnixNano())
		at := func(writes ...*pb.Write) map[string]int {
			codes := map[string]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					_, err := api.Commit(context.Background(), &pb.CommitRequest{Database: root[:strings.Index(root, "/documents")], Writes: writes})
					mu.Lock()
					codes[status.Code(err).String()]++
					mu.Unlock()
				})
			}
			wg.Wait()
			return codes
		}
		create := &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{Name: name, Fields: map[string]*pb.Value{"n": intV(0)}}},
			CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}}}
		if got := at(create); got["OK"] != 1 || got["AlreadyExists"] != callers-1 {
			t.Errorf("%T: creations at once answered %v, want one OK and %d AlreadyExists", api, got, callers-1)
		}
		resps, err := api.BatchGetDocuments(context.Background(), &pb.BatchGetDocumentsRequest{Database: root[:strings.Index(root, "/documents")], Documents: []string{name}})
		if err != nil || len(resps) != 1 || resps[0].GetFound() == nil {
			t.Fatalf("%T: read %v %v", api, resps, err)
		}
		update := &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{Name: name, Fields: map[string]*pb.Value{"n": intV(1)}}},
			CurrentDocument: &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: resps[0].GetFound().GetUpdateTime()}}}
		if got := at(update); got["OK"] != 1 || got["FailedPrecondition"] != callers-1 {
			t.Errorf("%T: updates of one version at once answered %v, want one OK and %d FailedPrecondition", api, got, callers-1)
		}
		add := &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{Name: name}}, UpdateMask: &pb.DocumentMask{},
			UpdateTransforms: []*pb.DocumentTransform_FieldTransform{{FieldPath: "n", TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: intV(1)}}}}
		if got := at(add); got["OK"] != callers {
			t.Errorf("%T: increments at once answered %v, want %d OK", api, got, callers)
		}
		resps, err = api.BatchGetDocuments(context.Background(), &pb.BatchGetDocumentsRequest{Database: root[:strings.Index(root, "/documents")], Documents: []string{name}})
		if err != nil || resps[0].GetFound().GetFields()["n"].GetIntegerValue() != 1+callers {
			t.Errorf("%T: after the increments: %v %v, want n = %d", api, resps, err, 1+callers)
		}
	}
}

// TestABigCommitIsRefusedAlike: the emulator refuses a request over
// 4 MiB (RESOURCE_EXHAUSTED), as the model does; one below passes both.
func TestABigCommitIsRefusedAlike(t *testing.T) {
	db, project := emulatorDB(t)
	database := "projects/" + project + "/databases/(default)"
	commit := func(docs int) *pb.CommitRequest {
		req := &pb.CommitRequest{Database: database}
		for i := range docs {
			req.Writes = append(req.Writes, &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{
				Name:   fmt.Sprintf("%s/documents/big/%d-%d", database, time.Now().UnixNano(), i),
				Fields: map[string]*pb.Value{"s": {ValueType: &pb.Value_StringValue{StringValue: strings.Repeat("x", 900<<10)}}}}}})
		}
		return req
	}
	for _, tc := range []struct {
		docs int
		want codes.Code
	}{{4, codes.OK}, {5, codes.ResourceExhausted}} { // about 3.5 and 4.4 MiB
		for _, api := range []firestoredb.Firestore{db.API(), fsmodel.New(nil)} {
			if _, err := api.Commit(context.Background(), commit(tc.docs)); status.Code(err) != tc.want {
				t.Errorf("%T: a commit of %d documents of 900 KiB: %v, want %s", api, tc.docs, err, tc.want)
			}
		}
	}
}

// emulatorDB opens a fresh project's default database on the emulator,
// closed when the test ends.
func emulatorDB(t *testing.T) (*firestoredb.DB, string) {
	t.Helper()
	host, err := testenv.EmulatorHost()
	testenv.NeedEmulators(t, err)
	project := testenv.NewProjectID("fsmodel")
	db, err := firestoredb.Open(context.Background(), project, firestoredb.DefaultDatabase, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, project
}

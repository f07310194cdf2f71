package fsmodel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
)

// TestChoiceCountsMatchTheEmulator: a choice counter's writes and reads,
// in the shapes the service makes them (firestoredb's helpers, the field
// paths of internal/datamodel), on the model and on the emulator alike:
// its document created with counts: {}; a shard's increments of count and
// of counts.<choice> (dotted paths, into a map the shard may not hold
// yet), in one commit with a member document's creation, its choice's
// update under a mask on the version read, or its deletion; the roll-up's
// update of the document's whole counts map under a mask; a window
// bucket's increments beside its masked fields; a SUM of counts.<choice>
// alone over the shards (a choice nobody holds too), now and at a past
// read time; reads of every document. The random sequences of
// TestModelMatchesTheEmulator meet these paths too, but rarely on
// documents that hold them.
//
//	go test ./internal/fsmodel -run TestChoiceCountsMatchTheEmulator -diffseed 7 -v
func TestChoiceCountsMatchTheEmulator(t *testing.T) {
	db, project := emulatorDB(t)
	root := "projects/" + project + "/databases/(default)/documents"
	seeds := []uint64{*diffSeed}
	if *diffSeed == 0 {
		seeds = nil
		for i := range max(*diffSeeds/2, 1) {
			seeds = append(seeds, uint64(i+1))
		}
	}
	for _, seed := range seeds {
		emulator := &world{name: "emulator", api: db.API(), root: root}
		model := &world{name: "model", api: fsmodel.New(nil), root: root}
		// A counter of its own for each sequence: the emulator's project
		// is shared.
		c := choiceCounter{id: fmt.Sprintf("counters/reactions:s%d-%d", seed, time.Now().UnixNano())}
		r := rand.New(rand.NewPCG(seed, 11))
		var trace []string
		for step := range 80 {
			o := c.randomOp(r, len(emulator.commits), step == 0)
			lastErr = ""
			got := o.run(model)
			modelErr := lastErr
			want := o.run(emulator)
			trace = append(trace, fmt.Sprintf("%d %s\n   emulator: %s", step, o.what, want))
			if got != want {
				t.Errorf("seed %d (replay: go test ./internal/fsmodel -run TestChoiceCountsMatchTheEmulator -diffseed %d -v), step %d, %s:\n  model:    %s %s\n  emulator: %s %s\n%s",
					seed, seed, step, o.what, got, modelErr, want, lastErr, strings.Join(trace, "\n"))
				break
			}
		}
		if *diffSeed != 0 {
			t.Logf("trace:\n%s", strings.Join(trace, "\n"))
		}
	}
}

// choiceCounter is the documents of one choice counter (paths under the
// root).
type choiceCounter struct{ id string }

var (
	choiceNames = []string{"love", "haha", "wow"}
	absentName  = "sad" // a choice nobody ever holds
)

func (c choiceCounter) shard(k int) string       { return fmt.Sprintf("%s/shards/%d", c.id, k) }
func (c choiceCounter) member(u int) string      { return fmt.Sprintf("%s/members/u%d", c.id, u) }
func (c choiceCounter) bucket(k int) string      { return fmt.Sprintf("%s/windows/minute_%d", c.id, k) }
func (c choiceCounter) all() []string            { return append(c.under(), c.id) }
func (c choiceCounter) countOf(ch string) string { return "counts." + ch }

func (c choiceCounter) under() []string {
	var out []string
	for k := range 3 {
		out = append(out, c.shard(k), c.member(k), c.bucket(k%2))
	}
	return out
}

// version is document path's update time in w now, as the service reads
// it before a conditional write (a time that never was when missing).
func (w *world) version(path string) time.Time {
	resps, err := w.api.BatchGetDocuments(context.Background(), &pb.BatchGetDocumentsRequest{Database: w.database(), Documents: []string{w.full(path)}})
	if err != nil || len(resps) == 0 || resps[0].GetFound() == nil {
		return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return resps[0].GetFound().GetUpdateTime().AsTime()
}

// randomOp is the next call of a sequence that made commits commits;
// first, the counter's creation.
func (c choiceCounter) randomOp(r *rand.Rand, commits int, first bool) op {
	k := r.IntN(commits+1) - 1 // a past read time, or (-1) now
	kind := 1 + r.IntN(6)
	if first || r.IntN(20) == 0 {
		kind = 0 // created again, now and then: refused
	}
	switch kind {
	case 0:
		return op{"create the counter document", func(w *world) string {
			return w.commitOf([]*pb.Write{fs.CreateWrite(w.full(c.id), map[string]*pb.Value{
				"choices": fs.StringsValue(choiceNames), "count": fs.IntValue(0), "counts": fs.MapValue(map[string]*pb.Value{})})})
		}}
	case 1, 2:
		// A flush: the shard's increments and a member's write, together.
		shard, user := r.IntN(3), r.IntN(3)
		choice := choiceNames[r.IntN(len(choiceNames))]
		was := choiceNames[r.IntN(len(choiceNames))]
		member := r.IntN(4) // 0 join, 1 switch, 2 leave, 3 none
		stale := r.IntN(5) == 0
		deltas := map[string]int64{"count": 0, "commits": 1, "slow": int64(r.IntN(2))}
		switch member {
		case 0:
			deltas["count"], deltas[c.countOf(choice)] = 1, 1
		case 1:
			deltas[c.countOf(choice)], deltas[c.countOf(was)] = 1, -1
			if was == choice {
				delete(deltas, c.countOf(choice))
			}
		case 2:
			deltas["count"], deltas[c.countOf(was)] = -1, -1
		}
		what := fmt.Sprintf("flush: shard %d %v, member %d %s %s (stale version %v)", shard, deltas, user, []string{"joins", "switches", "leaves", "-"}[member], choice, stale)
		return op{what, func(w *world) string {
			writes := []*pb.Write{fs.IncrementWrite(w.full(c.shard(shard)), deltas)}
			name := c.member(user)
			version := w.version(name)
			if stale {
				version = w.time(k).AsTime()
			}
			switch member {
			case 0:
				wr := fs.CreateWrite(w.full(name), map[string]*pb.Value{"uid": fs.StringValue(fmt.Sprint("u", user)), "choice": fs.StringValue(choice)})
				wr.UpdateTransforms = append(wr.UpdateTransforms, fs.ServerTime("joined_at"))
				writes = append(writes, wr)
			case 1:
				writes = append(writes, fs.UpdateWrite(w.full(name), map[string]*pb.Value{"choice": fs.StringValue(choice)}, []string{"choice"}, version))
			case 2:
				writes = append(writes, fs.DeleteWrite(w.full(name), version))
			}
			return w.commitOf(writes)
		}}
	case 3:
		// The roll-up: the document's count and whole counts, under a mask,
		// on the version read.
		counts := map[string]*pb.Value{}
		for _, ch := range choiceNames {
			if r.IntN(3) > 0 {
				counts[ch] = fs.IntValue(int64(r.IntN(5)))
			}
		}
		total := int64(r.IntN(9))
		return op{fmt.Sprintf("roll-up: count %d counts %v", total, counts), func(w *world) string {
			wr := fs.UpdateWrite(w.full(c.id), map[string]*pb.Value{"count": fs.IntValue(total), "counts": fs.MapValue(counts)},
				[]string{"count", "counts"}, w.version(c.id))
			wr.UpdateTransforms = append(wr.UpdateTransforms, fs.Increment("rollups", 1))
			return w.commitOf([]*pb.Write{wr})
		}}
	case 4:
		// A window bucket: increments of count and of choices' counts,
		// beside fields its mask names.
		b := r.IntN(2)
		deltas := map[string]int64{"count": int64(r.IntN(5) - 2)}
		for _, ch := range choiceNames {
			if r.IntN(2) == 0 {
				deltas[c.countOf(ch)] = int64(r.IntN(5) - 2)
			}
		}
		return op{fmt.Sprintf("bucket %d %v", b, deltas), func(w *world) string {
			wr := fs.IncrementWrite(w.full(c.bucket(b)), deltas)
			wr.GetUpdate().Fields = map[string]*pb.Value{"granularity": fs.StringValue("minute"), "ranked": fs.BoolValue(true)}
			wr.UpdateMask.FieldPaths = []string{"granularity", "ranked"}
			return w.commitOf([]*pb.Write{wr})
		}}
	case 5:
		// A strong read's sums: count, and each choice alone.
		fields := []string{"count", c.countOf(absentName)}
		for _, ch := range choiceNames {
			fields = append(fields, c.countOf(ch))
		}
		return op{fmt.Sprintf("sums of the shards at %d", k), func(w *world) string {
			var out []string
			for _, f := range fields {
				out = append(out, f+" "+w.sumOf(c.id, "shards", f, k))
			}
			return strings.Join(out, "; ")
		}}
	}
	return op{fmt.Sprintf("get every document at %d", k), func(w *world) string {
		resps, err := w.getAt(c.all(), k)
		if err != nil {
			return errCode(err)
		}
		var out []string
		for _, res := range resps {
			if res.GetFound() != nil {
				out = append(out, w.doc(res.GetFound()))
			}
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	}}
}

// sumOf is a SUM of field, alone, over the collection coll of document
// parent, at the k-th commit's time (now: -1).
func (w *world) sumOf(parent, coll, field string, k int) string {
	req := &pb.RunAggregationQueryRequest{Parent: w.full(parent), QueryType: &pb.RunAggregationQueryRequest_StructuredAggregationQuery{
		StructuredAggregationQuery: &pb.StructuredAggregationQuery{
			QueryType: &pb.StructuredAggregationQuery_StructuredQuery{StructuredQuery: &pb.StructuredQuery{
				From: []*pb.StructuredQuery_CollectionSelector{{CollectionId: coll}}}},
			Aggregations: []*pb.StructuredAggregationQuery_Aggregation{{Alias: "s",
				Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{
					Field: &pb.StructuredQuery_FieldReference{FieldPath: field}}}}}}}}
	if k >= 0 {
		req.ConsistencySelector = &pb.RunAggregationQueryRequest_ReadTime{ReadTime: w.time(k)}
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
	}
	return strings.Join(out, " ")
}

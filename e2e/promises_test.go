package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
)

// TestCorruptCounterDocumentIsDataLoss: a counter document written outside
// the functions without a usable num_shards used to make the group
// commit's goroutine panic (rand.IntN(0)) and take the whole instance down.
// Now it is DATA_LOSS for its own requests, the instance serves others, and
// its roll-up events are acknowledged (a retry cannot help) and logged.
func TestCorruptCounterDocumentIsDataLoss(t *testing.T) {
	t.Parallel()
	fs := testenv.Firestore(t, project)
	bad, good := newCounterID(t), newCounterID(t)
	createCounter(t, good, 2)
	if _, err := fs.Doc("counters/"+bad).Set(context.Background(), map[string]any{"num_shards": 0, "count": 0}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, bad))
		if r.Status != http.StatusInternalServerError || r.ErrorCode() != "DATA_LOSS" {
			t.Fatalf("increment of a corrupt counter: %s, want 500 DATA_LOSS", r)
		}
	}
	if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, good)); r.Status != http.StatusOK {
		t.Fatalf("another counter after it: %s", r)
	}
	// A shard of it written by hand: its event is acknowledged, not
	// redelivered for a day.
	if _, err := fs.Doc("counters/"+bad+"/shards/0").Set(context.Background(), map[string]any{"count": 1}); err != nil {
		t.Fatal(err)
	}
	req := testenv.ShardEvent(t, url("rollupCounter"), project, bad, 0, 1, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("roll-up event of a corrupt counter: %d, want 204", resp.StatusCode)
	}
	if len(logs.Await(map[string]any{"severity": "ERROR", "counter_id": bad, "message": "acknowledging an event whose counter cannot roll up"})) == 0 {
		t.Errorf("no ERROR line for the corrupt counter's event")
	}
}

// TestEventLogLinesAreInTheirTrace: rollupCounter's log lines carry the
// trace of the request that delivered the event, as other functions' do
// (they carried none).
func TestEventLogLinesAreInTheirTrace(t *testing.T) {
	t.Parallel()
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	r := testenv.Do(t, "POST", url("rollupCounter"), `{"specversion":"1.0"}`, "Content-Type", "application/cloudevents+json",
		"traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	if r.Status != http.StatusUnsupportedMediaType {
		t.Fatalf("a structured-mode event: %s, want 415", r)
	}
	if len(logs.Await(map[string]any{"severity": "ERROR", "function": "rollupCounter", "status": float64(http.StatusUnsupportedMediaType),
		"logging.googleapis.com/trace": "projects/" + project + "/traces/" + traceID})) == 0 {
		t.Errorf("no ERROR line in the event's trace")
	}
}

// TestFullAuditMarksWhatItCannotHeal: the full audit goes on past a
// counter it fails to heal (here a corrupt one) and marks it in the
// activity index, so the scheduled runs keep visiting it; it used to count
// the failure, move its cursor past it and answer pass_complete, leaving
// it unvisited until the next full pass.
func TestFullAuditMarksWhatItCannotHeal(t *testing.T) {
	fs := testenv.Firestore(t, project)
	bad := newCounterID(t)
	if _, err := fs.Doc("counters/"+bad).Set(context.Background(), map[string]any{"num_shards": 0, "count": 0}); err != nil {
		t.Fatal(err)
	}
	// Two passes' ends: the first may have begun past bad's id.
	failed := 0
	for range 2 {
		var rec struct {
			Mode         string
			Failed       int
			PassComplete bool `json:"pass_complete"`
		}
		for !rec.PassComplete {
			r := testenv.Do(t, "POST", url("reconcileCounters"), `{"full": true}`)
			r.Decode(t, &rec)
			if r.Status != http.StatusOK || rec.Mode != "full" {
				t.Fatalf("the full audit: %s", r)
			}
			failed += rec.Failed
		}
	}
	if failed == 0 {
		t.Fatalf("the full audit reported no failure, though %s cannot be healed", bad)
	}
	if _, err := fs.Doc("counter_activity/" + bad).Get(context.Background()); err != nil {
		t.Errorf("the counter the full audit could not heal has no activity marker: %v", err)
	}
}

// shardCounts reads every shard of counter id: shard -> count.
func shardCounts(t *testing.T, id string) map[string]int64 {
	t.Helper()
	docs, err := testenv.Firestore(t, project).Collection("counters/" + id + "/shards").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, d := range docs {
		out[d.Ref.ID], _ = d.Data()["count"].(int64)
	}
	return out
}

// plantShards writes shard values by hand, as a careless admin script
// would.
func plantShards(t *testing.T, id string, values map[string]int64) {
	t.Helper()
	fs := testenv.Firestore(t, project)
	for shard, v := range values {
		if _, err := fs.Doc("counters/"+id+"/shards/"+shard).Set(context.Background(), map[string]any{"count": v, "commits": 1, "slow": 0}); err != nil {
			t.Fatal(err)
		}
	}
}

func increment(t *testing.T, id string, delta int64) testenv.Response {
	t.Helper()
	return testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"delta":%d}`, id, delta))
}

// TestTheBoundIsKept: a counter holds at most ±(2^53 − 1). An increment
// that would pass it is a 400 OUT_OF_RANGE that writes nothing; before,
// Firestore's increment saturated at int64's limit and the answer was 200.
func TestTheBoundIsKept(t *testing.T) {
	t.Parallel()
	const maxCount = 1<<53 - 1
	id := newCounterID(t)
	createCounter(t, id, 1)
	plantShards(t, id, map[string]int64{"0": maxCount - 5})
	if r := increment(t, id, 10); r.Status != http.StatusBadRequest || r.ErrorCode() != "OUT_OF_RANGE" || !strings.Contains(string(r.Body), "delta") {
		t.Fatalf("+10 at MaxCount-5: %s, want 400 OUT_OF_RANGE naming delta", r)
	}
	if got := shardCounts(t, id)["0"]; got != maxCount-5 {
		t.Fatalf("the refused increment wrote: shard 0 = %d", got)
	}
	if r := increment(t, id, 5); r.Status != http.StatusOK {
		t.Fatalf("+5 up to MaxCount exactly: %s", r)
	}
	// Near the bound a commit is conditional on the guard document's
	// version at its sum, and moves it (internal/firestoredb/bound.go).
	if doc, err := testenv.Firestore(t, project).Doc("counters/" + id + "/bound/guard").Get(context.Background()); err != nil || doc.Data()["checked_at"] == nil {
		t.Fatalf("after a commit near the bound the guard document has no checked_at (%v)", err)
	}
	if r := increment(t, id, 1); r.Status != http.StatusBadRequest {
		t.Fatalf("+1 past MaxCount: %s", r)
	}
	if r := increment(t, id, -7); r.Status != http.StatusOK {
		t.Fatalf("-7 back inside: %s", r)
	}
	if got := getCounter(t, id, "strong").Count; got != maxCount-7 {
		t.Fatalf("strong = %d, want %d", got, int64(maxCount-7))
	}
	// In a list of increments, only the item that would pass it fails.
	r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"increments":[{"counter_id":%q,"delta":5},{"counter_id":%q,"delta":5},{"counter_id":%q,"delta":-3}]}`, id, id, id))
	var list struct{ Results []struct{ Status int } }
	r.Decode(t, &list)
	if r.Status != http.StatusOK || len(list.Results) != 3 || list.Results[0].Status != 200 || list.Results[1].Status != 400 || list.Results[2].Status != 200 {
		t.Fatalf("increments crossing the bound: %s", r)
	}
}

// TestSaturatedShardIsNotASuccess: a shard written by hand to just below
// int64's limit, after this instance last summed the counter. The commit
// goes through, Firestore's increment stops at the limit, and the answer
// says part of it may be lost (DATA_LOSS), never 200.
func TestSaturatedShardIsNotASuccess(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 1)
	if r := increment(t, id, 1); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	plantShards(t, id, map[string]int64{"0": math.MaxInt64 - 1})
	if r := increment(t, id, 5); r.Status != http.StatusInternalServerError || r.ErrorCode() != "DATA_LOSS" {
		t.Fatalf("an increment that saturates: %s, want 500 DATA_LOSS", r)
	}
	// From then on the counter is known to be past the bound: refused.
	if r := increment(t, id, 1); r.Status != http.StatusBadRequest || r.ErrorCode() != "OUT_OF_RANGE" {
		t.Fatalf("the next increment: %s, want 400 OUT_OF_RANGE", r)
	}
}

// TestOverflowingSumIsPermanent: shards that sum past int64 (written by
// hand) make the strong read DATA_LOSS, not a 503 that asks for retries
// that can never succeed, and a shrink that would merge them refuses
// instead of wrapping.
func TestOverflowingSumIsPermanent(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 2)
	plantShards(t, id, map[string]int64{"0": math.MaxInt64 - 1, "1": 5})
	r := testenv.Do(t, "GET", url("getCounter")+"?consistency=strong&counter_id="+id, "")
	if r.Status != http.StatusInternalServerError || r.ErrorCode() != "DATA_LOSS" || r.Header.Get("Retry-After") != "" {
		t.Fatalf("strong read of an overflowing sum: %s, want 500 DATA_LOSS without Retry-After", r)
	}
	reshard(t, id, 1)
	if got := shardCounts(t, id); got["0"] != math.MaxInt64-1 || got["1"] != 5 {
		t.Fatalf("the shrink merged an overflowing pair: %v", got)
	}
}

// TestShrinkIsNotLockedAfterMergeUntil: a counter nobody writes to after a
// shrink (its events lost, here) used to refuse every reshard with 409,
// without Retry-After, until a reconcile pass came. A reshard after
// merge_until now finishes the merge itself and goes on.
func TestShrinkIsNotLockedAfterMergeUntil(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 8)
	tapCounter(t, id, func(*triggerbridge.Delivery) bool { return false }) // no roll-up finishes it
	plantShards(t, id, map[string]int64{"0": 1, "3": 2, "5": 3, "7": 4})
	first := reshard(t, id, 2)
	until, err := time.Parse(time.RFC3339Nano, first.MergeUntil)
	if err != nil {
		t.Fatalf("merge_until %q: %v", first.MergeUntil, err)
	}
	// A late write to an old shard, from an instance that still caches 8.
	plantShards(t, id, map[string]int64{"6": 10})
	r := testenv.Do(t, "POST", url("reshardCounter"), fmt.Sprintf(`{"counter_id":%q,"num_shards":3}`, id))
	if r.Status != http.StatusConflict || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a reshard before merge_until: %s, want 409 with Retry-After", r)
	}
	time.Sleep(time.Until(until) + 100*time.Millisecond)
	second := reshard(t, id, 3)
	if second.PreviousNumShards != 2 || second.NumShards != 3 {
		t.Fatalf("after merge_until: %+v", second)
	}
	var total int64
	for shard, v := range shardCounts(t, id) {
		if n, _ := strconv.Atoi(shard); n >= 2 {
			t.Errorf("shard %s (%d) left after the shrink to 2 finished", shard, v)
		}
		total += v
	}
	if total != 20 {
		t.Errorf("the shards hold %d, want 20", total)
	}
}

package windowstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestTheLookOutlivesItsCaller: the look for buckets of the version
// before carries is the instance's own read. A caller that has given up
// (its context cancelled) does not stop it, and what it found serves the
// rankings after it without a read. A look that fails (here its caller's
// deadline has passed, which the look keeps) is taken as finding them for
// a minute (the safe answer: rankings list by count too), without a read
// again, and the minute after, looks again.
func TestTheLookOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("look"))
	fs := testenv.Firestore(t, db.ProjectID())
	hour := windows.UTC.Start(windows.Hour, time.Now())
	// A bucket of this version: it has its carries.
	if _, err := fs.Doc("counters/likes:a/windows/"+windows.DocID(windows.Hour, hour)).Set(context.Background(), map[string]any{
		"counter_id": "likes:a", "granularity": "hour", "start": hour, "ranked": true, "kind": "likes", "count": 5, "carry_0": 5,
	}); err != nil {
		t.Fatal(err)
	}
	looks := func() int64 { return db.Stats()["upgrade"].Aggregations }
	now := time.Now().Truncate(time.Microsecond) // the look's read time (the lists'), which Firestore takes only from the past

	failing, s := windowstore.New(db, windows.UTC), windowstore.New(db, windows.UTC)
	gone, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if !windowstore.HoldsOld(failing, gone, windows.Hour, hour, now.Add(-2*time.Minute)) {
		t.Errorf("a look that failed: taken as finding none, want as finding some")
	}
	before := looks()
	if old := windowstore.HoldsOld(failing, context.Background(), windows.Hour, hour, now.Add(-90*time.Second)); !old || looks() != before {
		t.Errorf("within the minute after a failed look: found none (%v), or looked again (%d aggregations)", !old, looks()-before)
	}
	if windowstore.HoldsOld(failing, context.Background(), windows.Hour, hour, now) || looks() == before {
		t.Errorf("a minute after a failed look: not looked again, or found some")
	}

	cancelled, stop := context.WithCancel(context.Background())
	stop() // the caller gave up
	before = looks()
	if windowstore.HoldsOld(s, cancelled, windows.Hour, hour, now) || looks() != before+2 {
		t.Errorf("a look whose caller gave up: %d aggregations, want its two, finding none", looks()-before)
	}
	if old := windowstore.HoldsOld(s, context.Background(), windows.Hour, hour.Add(time.Hour), now); old || looks() != before+2 {
		t.Errorf("a later hour after a look found none: found some (%v), or looked again (%d aggregations)", old, looks()-before-2)
	}
}

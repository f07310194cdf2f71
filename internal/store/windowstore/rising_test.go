package windowstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestRisingRanksAJumpOverASteadyGiant writes, with the clock set by the
// test, a day of hour buckets and a last hour of minute buckets for four
// counters: a steady one of 100 an hour, one that jumps from 5 to 60, one
// with 3 after none, and one falling from 50 to 5. Rising ranks the jump
// first, the 3 after none far below it (the prior), and neither the
// steady giant nor the falling one.
func TestRisingRanksAJumpOverASteadyGiant(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("rising"))
	store := windowstore.New(db)
	fs := testenv.Firestore(t, db.ProjectID())
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 10, 25, 30, 0, time.UTC)
	batch := fs.BulkWriter(ctx)
	for _, c := range []struct {
		id             string
		perHour, lastH int64
	}{{"r:steady", 100, 100}, {"r:jump", 5, 60}, {"r:fresh", 0, 3}, {"r:falling", 50, 5}} {
		for h := 1; h <= 26; h++ { // the day before, and more (outside the baseline)
			start := windows.Hour.Start(now).Add(-time.Duration(h) * time.Hour)
			if c.perHour > 0 && h > 1 {
				put(fs, batch, c.id, "r", windows.Hour, start, c.perHour, nil)
			}
		}
		put(fs, batch, c.id, "r", windows.Hour, windows.Hour.Start(now), c.lastH, nil)
		put(fs, batch, c.id, "r", windows.Minute, now.Add(-10*time.Minute).Truncate(time.Minute), c.lastH, nil)
	}
	batch.End()
	scored, candidates, err := store.Rising(ctx, windows.RisingNow, now, 10, 10, "r")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range scored {
		got = append(got, fmt.Sprintf("%s=%d/%.0f", s.CounterID, s.Count, s.Baseline))
	}
	if want := []string{"r:jump=60/5", "r:fresh=3/0"}; !slices.Equal(got, want) || candidates != 4 {
		t.Errorf("rising at %s: %v of %d candidates, want %v of 4", now, got, candidates, want)
	}
	if len(scored) == 2 && scored[0].Score < 10*scored[1].Score {
		t.Errorf("the jump scores %.2f, the 3 after none %.2f: the prior must keep the few far below", scored[0].Score, scored[1].Score)
	}
}

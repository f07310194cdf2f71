package windowstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestRisingRanksAJumpOverASteadyGiant writes, with the clock set by the
// test, a day of hour buckets and a last hour of minute buckets for
// sixty steady counters of 100 an hour, one that jumps from 5 to 60, one
// with 3 after none, and one falling from 50 to 5; each current hour's
// bucket holds the rise the roll-up's momentum gives it. Rising ranks the
// jump first, though sixty count more, the 3 after none far below it (the
// prior), and neither the steady giants nor the falling one.
func TestRisingRanksAJumpOverASteadyGiant(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("rising"))
	store := windowstore.New(db, windows.UTC)
	fs := testenv.Firestore(t, db.ProjectID())
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 10, 25, 30, 0, time.UTC)
	batch := fs.BulkWriter(ctx)
	type counter struct {
		id             string
		perHour, lastH int64
	}
	counters := []counter{{"r:jump", 5, 60}, {"r:fresh", 0, 3}, {"r:falling", 50, 5}}
	for i := range 60 {
		counters = append(counters, counter{fmt.Sprintf("r:steady%02d", i), 100, 100})
	}
	for _, c := range counters {
		for h := 1; h <= 26; h++ { // the day before, and more (outside the baseline)
			start := windows.UTC.Start(windows.Hour, now).Add(-time.Duration(h) * time.Hour)
			if c.perHour > 0 && h > 1 {
				put(fs, batch, c.id, "r", windows.Hour, start, c.perHour, nil)
			}
		}
		rise := windows.Momentum{Hour: windows.UTC.Start(windows.Hour, now), Count: c.lastH, Rate: float64(c.perHour), Weight: 1}.Rise(windows.RisingNow)
		put(fs, batch, c.id, "r", windows.Hour, windows.UTC.Start(windows.Hour, now), c.lastH, map[string]int64{"rise": int64(math.Round(rise))})
		put(fs, batch, c.id, "r", windows.Minute, now.Add(-10*time.Minute).Truncate(time.Minute), c.lastH, nil)
	}
	batch.End()
	scored, candidates, err := store.Rising(ctx, windows.RisingNow, now, 25, 10, "r")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range scored {
		got = append(got, fmt.Sprintf("%s=%d/%.0f", s.CounterID, s.Count, s.Baseline))
	}
	if want := []string{"r:jump=60/5", "r:fresh=3/0"}; !slices.Equal(got, want) || candidates > 4*25 {
		t.Errorf("rising at %s: %v of %d candidates, want %v", now, got, candidates, want)
	}
	if len(scored) == 2 && scored[0].Score < 10*scored[1].Score {
		t.Errorf("the jump scores %.2f, the 3 after none %.2f: the prior must keep the few far below", scored[0].Score, scored[1].Score)
	}
}

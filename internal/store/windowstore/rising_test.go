package windowstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
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
// bucket holds the rise the roll-up's momentum gives it, and its peaks.
// Rising ranks the jump first, though sixty count more, the 3 after none
// far below it (the prior), and neither the steady giants nor the falling
// one. It cannot prove it (not exact): a counter left out of the lists
// of the last hour, beyond 25 of them at 100, could count 100 after none
// and score 100/√10 ≈ 32, more than the jump's 55/√15 ≈ 14. The same
// three alone, of a kind of their own, are all candidates: exact.
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
	counters := []counter{{"jump", 5, 60}, {"fresh", 0, 3}, {"falling", 50, 5}}
	for i := range 60 {
		counters = append(counters, counter{fmt.Sprintf("steady%02d", i), 100, 100})
	}
	hour, minute := windows.UTC.Start(windows.Hour, now), now.Add(-10*time.Minute).Truncate(time.Minute)
	for _, c := range counters {
		for _, kind := range []string{"r", "q"} {
			if kind == "q" && strings.HasPrefix(c.id, "steady") {
				continue
			}
			id := kind + ":" + c.id
			for h := 2; h <= 26; h++ { // the day before the last 60 minutes, and more (outside the baseline)
				if c.perHour > 0 {
					put(fs, batch, id, kind, windows.Hour, hour.Add(-time.Duration(h)*time.Hour), c.perHour, nil)
				}
			}
			rise := windows.Momentum{Hour: hour, Count: c.lastH, Rate: float64(c.perHour), Weight: 1}.Rise(windows.RisingNow)
			fields := peakFields(windows.Peak{}.Add(windows.UTC, windows.Hour, hour, minute, c.lastH), false)
			fields["rise"] = int64(math.Round(rise))
			put(fs, batch, id, kind, windows.Hour, hour, c.lastH, fields)
			put(fs, batch, id, kind, windows.Minute, minute, c.lastH, nil)
		}
	}
	batch.End()
	for _, tc := range []struct {
		kind  string
		exact bool
	}{{"r", false}, {"q", true}} {
		scored, exact, candidates, err := store.Rising(ctx, windows.RisingNow, now, 25, 10, tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range scored {
			got = append(got, fmt.Sprintf("%s=%d/%.0f", s.CounterID, s.Count, s.Baseline))
		}
		want := []string{tc.kind + ":jump=60/5", tc.kind + ":fresh=3/0"}
		if !slices.Equal(got, want) || exact != tc.exact || candidates > 3*25 {
			t.Errorf("rising of %s at %s: %v of %d candidates (exact %v), want %v (exact %v)", tc.kind, now, got, candidates, exact, want, tc.exact)
		}
		if len(scored) == 2 && scored[0].Score < 10*scored[1].Score {
			t.Errorf("the jump scores %.2f, the 3 after none %.2f: the prior must keep the few far below", scored[0].Score, scored[1].Score)
		}
	}
}

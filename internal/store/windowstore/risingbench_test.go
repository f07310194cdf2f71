package windowstore_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

var risingBench = flag.Bool("rising-bench", false, "time rising over 1,000 counters with a month of hour buckets (bench/README.md)")

// TestRisingOverAMonthOf1000Counters, with -rising-bench, plays a month
// of hours for 1,000 counters of a kind (each a steady rate of its own,
// noisy; ten of them jump in the last hour) into the momentum the roll-up
// keeps, writes the hour buckets rising reads (the last 25 hours; older
// ones it never reads) with the rise, and times rising and counts its
// reads: bench/README.md.
func TestRisingOverAMonthOf1000Counters(t *testing.T) {
	if !*risingBench {
		t.Skip("with -rising-bench")
	}
	db := testenv.DB(t, testenv.NewProjectID("risingbench"))
	store, fs := windowstore.New(db, windows.UTC), testenv.Firestore(t, db.ProjectID())
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 10, 25, 30, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	batch := fs.BulkWriter(ctx)
	jumpers := map[string]bool{}
	for c := range 1000 {
		id := fmt.Sprintf("m:c%04d", c)
		rate := 1 + rng.Float64()*200
		m := windows.Momentum{}
		for h := 30 * 24; h >= 1; h-- {
			start := windows.UTC.Start(windows.Hour, now).Add(-time.Duration(h) * time.Hour)
			n := int64(rate * (0.8 + 0.4*rng.Float64()))
			m = m.Add(windows.RisingNow, start.Add(30*time.Minute), n)
			if h <= 25 { // what rising reads of a month: the day before the last hour, whose rise holds the rest
				put(fs, batch, id, "m", windows.Hour, start, n, nil)
			}
		}
		last := int64(rate * (0.8 + 0.4*rng.Float64()))
		if c%100 == 7 {
			last, jumpers[id] = int64(rate*6)+20, true
		}
		m = m.Add(windows.RisingNow, now, last)
		hour, minute := windows.UTC.Start(windows.Hour, now), now.Add(-5*time.Minute).Truncate(time.Minute)
		fields := peakFields(windows.Peak{}.Add(windows.UTC, windows.Hour, hour, minute, last), false) // the hour before's peaks closed, as the roll-up leaves them
		fields["rise"] = int64(math.Round(m.Rise(windows.RisingNow)))
		put(fs, batch, id, "m", windows.Hour, hour, last, fields)
		put(fs, batch, id, "m", windows.Minute, minute, last, nil)
	}
	batch.End()
	rctx, reads := ledger.New(ctx, true)
	began := time.Now()
	scored, exact, candidates, err := store.Rising(rctx, windows.RisingNow, now, 25, 10, "m")
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, s := range scored {
		if jumpers[s.CounterID] {
			found++
		}
	}
	fmt.Printf("| 1,000 counters, a month of hours each | %d candidates | %d reads | %s | %d of the 10 jumpers in the top 10 | exact: %v |\n", candidates, reads.Reads(), took.Round(time.Millisecond), found, exact)
	if found != 10 {
		t.Errorf("the top 10 holds %d of the 10 jumpers: %+v", found, scored)
	}
}

package windowstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestRollingTopIsTheBruteForceRanking writes the minute and hour buckets
// a roll-up would write for counters that gain and lose (unlikes are
// negative changes) over two hours, and checks the rolling window's
// ranking against a sum of every counter's minutes in the window: equal
// when it says it is exact, a prefix of it when not, for many limits and
// seeds. Its hour buckets hold what the roll-up's leave: their peaks, open
// peaks and carries (windows.Peak), of the changes in time order.
func TestRollingTopIsTheBruteForceRanking(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("rolling"))
	store := windowstore.New(db, windows.UTC)
	fs := testenv.Firestore(t, db.ProjectID())
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 10, 25, 30, 0, time.UTC)
	r := windows.LastHour
	from := r.From(now)
	exactRounds := 0
	for seed := range 4 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		kind := fmt.Sprintf("k%d", seed)
		truth := map[string]int64{}
		batch := fs.BulkWriter(ctx)
		for c := range 40 {
			id := fmt.Sprintf("%s:c%d", kind, c)
			hours := map[time.Time]int64{} // count
			peaks := map[time.Time]windows.Peak{}
			var running windows.Peak
			for m := 119; m >= 0; m-- { // oldest first, as roll-ups come
				start := windows.UTC.Start(windows.Minute, now).Add(-time.Duration(m) * time.Minute)
				if rng.IntN(3) != 0 {
					continue
				}
				change := int64(rng.IntN(20) - 6)
				if c < 3 {
					// Liked in the window's part of the previous hour, and as
					// much unliked before it: nothing this hour, a previous
					// hour that counts little, yet the window's top.
					switch {
					case !start.Before(windows.UTC.Start(windows.Hour, now)):
						continue
					case start.Before(from):
						change = -20
					default:
						change = 15
					}
				}
				put(fs, batch, id, kind, windows.Minute, start, change, nil)
				if !start.Before(from) {
					truth[id] += change
				}
				h := windows.UTC.Start(windows.Hour, start)
				hours[h] += change
				running = running.Add(windows.UTC, windows.Hour, h, start, change)
				peaks[h] = running
			}
			for h, count := range hours {
				put(fs, batch, id, kind, windows.Hour, h, count, peakFields(peaks[h], running.Start.After(h)))
			}
		}
		batch.End()
		var want []windows.Ranked
		for id, n := range truth {
			if n > 0 {
				want = append(want, windows.Ranked{CounterID: id, Count: n})
			}
		}
		slices.SortFunc(want, func(a, b windows.Ranked) int {
			if a.Count != b.Count {
				return int(b.Count - a.Count)
			}
			return strings.Compare(a.CounterID, b.CounterID)
		})
		for _, limit := range []int{1, 3, 10} {
			for depth := limit; depth <= 40; depth *= 2 {
				got, exact, err := store.RollingTop(ctx, r, now, depth, limit, kind)
				if err != nil {
					t.Fatal(err)
				}
				if !exact {
					// Only what it is sure of, first: none left out while
					// one it outranks is in.
					if len(got) >= limit || !slices.Equal(got, want[:len(got)]) {
						t.Errorf("seed %d, limit %d, depth %d: not exact %v, the window's sums rank %v", seed, limit, depth, got, want)
					}
					continue
				}
				exactRounds++
				if w := want[:min(limit, len(want))]; !slices.Equal(got, w) {
					t.Errorf("seed %d, limit %d, depth %d: exact %v, the window's sums rank %v", seed, limit, depth, got, w)
				}
				break
			}
		}
	}
	if exactRounds == 0 {
		t.Error("no round was ever exact")
	}
}

// peakFields are the fields the roll-up writes of an hour's peaks: each
// slot's peak kept, carry, and open peak (0 once closed by the counter's
// first roll-up in a later hour).
func peakFields(p windows.Peak, closed bool) map[string]int64 {
	fields := map[string]int64{}
	for s, v := range p.Values {
		fields[fmt.Sprint("run_", s)], fields[fmt.Sprint("carry_", s)], fields[fmt.Sprint("peak_", s)] = v, p.Carry(s), p.Open(s)
		if closed {
			fields[fmt.Sprint("peak_", s)] = 0
		}
	}
	return fields
}

// put writes a window bucket as the roll-up writes it, with its bounds
// (peaks, open peaks, carries).
func put(fs *firestore.Client, w *firestore.BulkWriter, id, kind string, g windows.Granularity, start time.Time, count int64, bounds map[string]int64) {
	doc := map[string]any{"counter_id": id, "granularity": string(g), "start": start, "count": count, "ranked": true, "kind": kind}
	for field, v := range bounds {
		doc[field] = v
	}
	w.Set(fs.Doc("counters/"+id+"/windows/"+windows.DocID(g, start)), doc)
}

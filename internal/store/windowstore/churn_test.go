package windowstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/counter"
	fsdb "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/store/rollupstore"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestChurnCannotEmptyTheTrendingList replays the attack that emptied
// last_hour: accounts liked in one roll-up and unliked in the next, 72
// times on each of 26 posts, in the hour before one with 60 real likes.
// Ranked by the sum of their changes that added (72 each, count 0), the
// churned posts filled the previous hour's candidates, above the real
// post's 60: after the hour turned the answer was empty, not exact. The
// roll-ups are written by the roll-up's own write path, on a clock the
// test sets, across an hour and a day boundary.
func TestChurnCannotEmptyTheTrendingList(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("churn"))
	ctx := context.Background()
	create, rollUp := rollUps(t, db)
	store := windowstore.New(db)

	hour := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC) // the day's last hour
	create("likes:real")
	for i := range 60 { // 60 likes between 23:30 and 24:00
		rollUp("likes:real", hour.Add(30*time.Minute+time.Duration(i)*30*time.Second), 1)
	}
	for p := range 26 {
		id := fmt.Sprintf("likes:churned-%d", p)
		create(id)
		for i := range 144 { // like, unlike: 72 of each over the hour
			rollUp(id, hour.Add(time.Duration(i)*24*time.Second), 1-2*int64(i%2))
		}
	}

	now := hour.Add(80 * time.Minute) // 00:20 the next day: the hour and the day turned
	for _, r := range []windows.Rolling{windows.LastHour, windows.LastDay} {
		got, exact, err := store.RollingTop(ctx, r, now, 10, 10, "likes")
		if err != nil {
			t.Fatal(err)
		}
		if !exact || len(got) != 1 || got[0] != (windows.Ranked{CounterID: "likes:real", Count: 60}) {
			t.Errorf("%s after the churn: %v, exact %v; want likes:real with 60 alone, exact", r.Name, got, exact)
		}
	}
}

// TestAPeakStartsFromTheGrossOfBefore: a counter whose document and
// buckets were written before peaks were kept. Its first roll-up after
// the upgrade starts each bucket's peak from the bucket's gross (which
// bounds every part of it), drops the gross, and goes on from there.
func TestAPeakStartsFromTheGrossOfBefore(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("peaks"))
	ctx := context.Background()
	create, rollUp := rollUps(t, db)
	fs := testenv.Firestore(t, db.ProjectID())
	hour := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	create("likes:old")
	// As the roll-up wrote them before: no peaks on the counter, a gross
	// on its buckets.
	if _, err := fs.Doc("counters/likes:old").Update(ctx, []firestore.Update{{Path: "peaks", Value: firestore.Delete}, {Path: "count", Value: 10}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range windows.Listed {
		if _, err := fs.Doc("counters/likes:old/windows/"+windows.DocID(g, g.Start(hour))).Set(ctx, map[string]any{
			"counter_id": "likes:old", "granularity": string(g), "start": g.Start(hour), "count": 10, "gross": 50, "ranked": true, "kind": "likes"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct{ change, peak int64 }{{1, 51}, {-3, 48}, {2, 50}} {
		rollUp("likes:old", hour.Add(10*time.Minute), step.change)
		for _, g := range windows.Listed {
			snap, err := fs.Doc("counters/likes:old/windows/" + windows.DocID(g, g.Start(hour))).Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if peak, _ := snap.DataAt("peak"); peak != step.peak || snap.Data()["gross"] != nil {
				t.Errorf("%s bucket after %+d: %v, want peak %d and no gross", g, step.change, snap.Data(), step.peak)
			}
		}
	}
}

// rollUps returns, over db, a creator of ranked counters of kind likes and
// a writer of what a roll-up at a given time that saw a change writes, by
// the roll-up's own write path.
func rollUps(t *testing.T, db *fsdb.DB) (func(id string) counter.Counter, func(id string, at time.Time, change int64)) {
	ctx := context.Background()
	counters := counterstore.New(db, counterstore.Options{})
	rollups := rollupstore.New(db, counters, windows.DefaultRetention)
	create := func(id string) counter.Counter {
		c, err := counters.Create(ctx, counter.Counter{ID: id, NumShards: 1, Origin: counter.ByAdmin, Ranked: true, Kind: "likes"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rollUp := func(id string, at time.Time, change int64) {
		t.Helper()
		c, err := counters.Stored(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		next := c
		next.Count, next.AsOf = c.Count+change, at
		if _, ok, err := rollups.WriteRollup(ctx, counter.Rollup{Next: next, Change: change}); err != nil || !ok {
			t.Fatalf("the roll-up of %s at %s: ok %v, %v", id, at, ok, err)
		}
	}

	return create, rollUp
}

package windowstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// oldRollUp writes what a roll-up of the version before carries wrote for
// a change of n (at least 0) of counter id at at: each bucket's count, an
// hour's and a day's peaks of the slots begun, the counter's count and
// its peaks without their count and carry.
func oldRollUp(t *testing.T, fs *firestore.Client, id string, at time.Time, n int64) {
	t.Helper()
	ctx := context.Background()
	peaks := map[string]any{}
	for _, g := range windows.All {
		start := windows.UTC.Start(g, at)
		fields := map[string]any{"counter_id": id, "granularity": string(g), "start": start, "ranked": true, "kind": "likes",
			"count": firestore.Increment(n)}
		listed := slices.Contains(windows.Listed, g)
		if listed {
			for slot := range windows.UTC.Slot(g, start, at) + 1 {
				fields[fmt.Sprint("peak_", slot)] = firestore.Increment(n)
			}
		}
		ref := fs.Doc("counters/" + id + "/windows/" + windows.DocID(g, start))
		if _, err := ref.Set(ctx, fields, firestore.MergeAll); err != nil {
			t.Fatal(err)
		}
		if listed {
			snap, err := ref.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p := map[string]any{"start": start}
			for slot := range windows.PeakSlots {
				v, _ := snap.DataAt(fmt.Sprint("peak_", slot))
				p[fmt.Sprint("peak_", slot)], _ = v.(int64)
			}
			peaks[string(g)] = p
		}
	}
	if _, err := fs.Doc("counters/"+id).Update(ctx, []firestore.Update{{Path: "count", Value: firestore.Increment(n)}, {Path: "peaks", Value: peaks}}); err != nil {
		t.Fatal(err)
	}
}

// TestRankingsHoldWhileTheVersionBeforeCarriesWrote: the version before
// wrote no carry, so a post it alone rolled up in the current hour is in
// no list by carry. z has 30 likes in the hour before and 40 through the
// version before in this one: 70 in the last hour, above every post a
// ranking of two lists to depth 2 would bound by (45). While the current
// hour holds such a bucket, the ranking lists it by count as well and
// bounds by the sum of the two lists' last values, so it is not exact at
// depth 2 and puts z first deeper; once this version rolled z up, z has
// its carry and depth 2 is exact (once an instance looks again: it takes
// a current bucket found holding buckets of the version before to hold
// some for a minute).
func TestRankingsHoldWhileTheVersionBeforeCarriesWrote(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("upgrade"))
	ctx := context.Background()
	create, rollUp := rollUps(t, db)
	hour := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		a, b := fmt.Sprintf("likes:a-%d", i), fmt.Sprintf("likes:b-%d", i)
		create(a)
		create(b)
		rollUp(a, hour.Add(40*time.Minute), 40)
		rollUp(b, hour.Add(65*time.Minute), 45)
	}
	create("likes:z")
	rollUp("likes:z", hour.Add(40*time.Minute), 30)
	oldRollUp(t, testenv.Firestore(t, db.ProjectID()), "likes:z", hour.Add(65*time.Minute), 40)

	store, now := windowstore.New(db, windows.UTC), hour.Add(75*time.Minute)
	if got, exact, err := store.RollingTop(ctx, windows.LastHour, now, 2, 1, "likes"); err != nil || exact {
		t.Errorf("depth 2 while the version before wrote: %v, exact %v, %v; want not exact", got, exact, err)
	}
	got, exact, err := store.RollingTop(ctx, windows.LastHour, now, 25, 3, "likes")
	want := []windows.Ranked{{CounterID: "likes:z", Count: 70}, {CounterID: "likes:b-0", Count: 45}, {CounterID: "likes:b-1", Count: 45}}
	if err != nil || !exact || !slices.Equal(got, want) {
		t.Errorf("depth 25 while the version before wrote: %v, exact %v, %v; want %v, exact", got, exact, err, want)
	}

	rollUp("likes:z", hour.Add(70*time.Minute), 1)
	store = windowstore.New(db, windows.UTC) // an instance that has not looked yet (one that has looks again after a minute)
	got, exact, err = store.RollingTop(ctx, windows.LastHour, now, 2, 1, "likes")
	if want := []windows.Ranked{{CounterID: "likes:z", Count: 71}}; err != nil || !exact || !slices.Equal(got, want) {
		t.Errorf("depth 2 once this version rolled z up: %v, exact %v, %v; want %v, exact", got, exact, err, want)
	}
}

package windowstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/store/shared"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/counter"
	fsdb "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/store/rollupstore"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestChurnCannotEmptyTheTrendingList replays, scaled down, the attack
// that emptied last_hour (72 toggles on each of 26 posts, before a post
// with 60 likes): accounts like in one roll-up and unlike in the next, 21
// times on each of 11 posts, in the hour before one with 20 real likes.
// Ranked by the sum of their changes that added (21 each, count 0), the
// churned posts filled the previous hour's candidates, above the real
// post's 20: after the hour turned the answer was empty, not exact. The
// roll-ups are written by the roll-up's own write path, on a clock the
// test sets, across an hour and a day boundary.
func TestChurnCannotEmptyTheTrendingList(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("churn"))
	ctx := context.Background()
	create, rollUp := rollUps(t, db)
	store := windowstore.New(db, windows.UTC)

	hour := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC) // the day's last hour
	create("likes:real")
	for i := range 20 { // 20 likes between 23:30 and 24:00
		rollUp("likes:real", hour.Add(30*time.Minute+time.Duration(i)*90*time.Second), 1)
	}
	for p := range 11 {
		id := fmt.Sprintf("likes:churned-%d", p)
		create(id)
		for i := range 42 { // like, unlike: 21 of each over the hour
			rollUp(id, hour.Add(time.Duration(i)*85*time.Second), 1-2*int64(i%2))
		}
	}

	now := hour.Add(80 * time.Minute) // 00:20 the next day: the hour and the day turned
	for _, r := range []windows.Rolling{windows.LastHour, windows.LastDay} {
		got, exact, err := store.RollingTop(ctx, r, now, 10, 10, "likes")
		if err != nil {
			t.Fatal(err)
		}
		if !exact || len(got) != 1 || got[0] != (windows.Ranked{CounterID: "likes:real", Count: 20}) {
			t.Errorf("%s after the churn: %v, exact %v; want likes:real with 20 alone, exact", r.Name, got, exact)
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
		if _, err := fs.Doc("counters/likes:old/windows/"+windows.DocID(g, windows.UTC.Start(g, hour))).Set(ctx, map[string]any{
			"counter_id": "likes:old", "granularity": string(g), "start": windows.UTC.Start(g, hour), "count": 10, "gross": 50, "ranked": true, "kind": "likes"}); err != nil {
			t.Fatal(err)
		}
	}
	// At 10:10 (the hour's slot 1), then at 10:30 (slot 3).
	for _, step := range []struct {
		at        time.Duration
		change    int64
		hour, day [windows.PeakSlots]int64
	}{
		{10 * time.Minute, 1, [6]int64{51, 51}, [6]int64{51, 51, 51}},
		{10 * time.Minute, -3, [6]int64{48, 48}, [6]int64{48, 48, 48}},
		{30 * time.Minute, 2, [6]int64{50, 50, 2, 2}, [6]int64{50, 50, 50}},
	} {
		rollUp("likes:old", hour.Add(step.at), step.change)
		for _, g := range windows.Listed {
			snap, err := fs.Doc("counters/likes:old/windows/" + windows.DocID(g, windows.UTC.Start(g, hour))).Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got [windows.PeakSlots]int64
			for s := range got {
				v, _ := snap.DataAt(fmt.Sprint("peak_", s))
				got[s], _ = v.(int64)
			}
			want := map[windows.Granularity][6]int64{windows.Hour: step.hour, windows.Day: step.day}[g]
			if got != want || snap.Data()["gross"] != nil {
				t.Errorf("%s bucket after %+d: peaks %v (gross %v), want %v and no gross", g, step.change, got, snap.Data()["gross"], want)
			}
		}
	}
}

// rollUps returns, over db, a creator of ranked counters of kind likes and
// a writer of what a roll-up at a given time that saw a change writes, by
// the roll-up's own write path, in UTC.
func rollUps(t *testing.T, db *fsdb.DB) (func(id string) counter.Counter, func(id string, at time.Time, change int64)) {
	return rollUpsIn(t, db, windows.UTC)
}

// rollUpsIn is rollUps, on the buckets of cal.
func rollUpsIn(t *testing.T, db *fsdb.DB, cal windows.Calendar) (func(id string) counter.Counter, func(id string, at time.Time, change int64)) {
	ctx := context.Background()
	base := shared.New(db, shared.Options{})
	counters := counterstore.New(base, counterstore.Options{Calendar: cal})
	rollups := rollupstore.New(base, rollupstore.Options{Windows: windows.DefaultRetention, Remember: counters.Remember, Calendar: cal})
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

// TestARollingDeployKeepsRankingsExact: while the version before carries
// still runs (a rolling deploy, a redelivered event), its roll-ups write a
// bucket's peaks and count, and the counter's peaks without their count
// and carry, which the next roll-up of this version reads again from the
// buckets: a counter whose likes came through both is ranked exactly
// once that roll-up ran.
func TestARollingDeployKeepsRankingsExact(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("rolldeploy"))
	ctx := context.Background()
	create, rollUp := rollUps(t, db)
	hour := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	create("likes:x")
	create("likes:y")
	rollUp("likes:x", hour.Add(10*time.Minute), 1)
	oldRollUp(t, testenv.Firestore(t, db.ProjectID()), "likes:x", hour.Add(20*time.Minute), 100)
	rollUp("likes:x", hour.Add(30*time.Minute), -1)
	rollUp("likes:y", hour.Add(65*time.Minute), 50)

	got, exact, err := windowstore.New(db, windows.UTC).RollingTop(ctx, windows.LastHour, hour.Add(75*time.Minute), 10, 10, "likes")
	want := []windows.Ranked{{CounterID: "likes:x", Count: 99}, {CounterID: "likes:y", Count: 50}}
	if err != nil || !exact || !slices.Equal(got, want) {
		t.Errorf("last_hour: %v, exact %v, %v; want %v, exact", got, exact, err, want)
	}
}

// TestLikesHeldAcrossTheHourDoNotHideIt: the attack that emptied
// last_hour for an hour: 70 accounts like 30 posts in the last seconds of
// an hour and unlike them in the first of the next. Their previous hour's
// peak is 70, but the next hour's −70 leaves them nothing to carry: they
// are not candidates, and the real posts rank, exactly, at once; so does
// a post tied at the cut, by id (docs/design/windows.md).
func TestLikesHeldAcrossTheHourDoNotHideIt(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("held"))
	ctx := context.Background()
	create, rollUp := rollUps(t, db)
	hour := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC) // the day's last hour: the day turns too
	for p := range 30 {
		id := fmt.Sprintf("likes:junk-%02d", p)
		create(id)
		rollUp(id, hour.Add(59*time.Minute+30*time.Second), 70)
		rollUp(id, hour.Add(60*time.Minute+10*time.Second), -70)
	}
	real := map[string]int64{"likes:trend-1": 60, "likes:trend-2": 30}
	for i := range 30 {
		real[fmt.Sprintf("likes:tied-%02d", i)] = 20
	}
	for id, n := range real {
		create(id)
		rollUp(id, hour.Add(40*time.Minute), n)
	}
	now := hour.Add(90 * time.Minute)
	for _, r := range []windows.Rolling{windows.LastHour, windows.LastDay} {
		got, exact, err := windowstore.New(db, windows.UTC).RollingTop(ctx, r, now, 25, 10, "likes")
		want := []windows.Ranked{{CounterID: "likes:trend-1", Count: 60}, {CounterID: "likes:trend-2", Count: 30}}
		for i := range 8 {
			want = append(want, windows.Ranked{CounterID: fmt.Sprintf("likes:tied-%02d", i), Count: 20})
		}
		if err != nil || !exact || !slices.Equal(got, want) {
			t.Errorf("%s after the likes held across the hour: %v, exact %v, %v; want %v, exact", r.Name, got, exact, err, want)
		}
	}
}

// TestEarlyLikesDoNotHideTheNextHour: 61 likes on each of 25 posts in the
// first seconds of an hour gave them a peak of 61 for the whole next
// hour, although no window then covered those likes: a post with 50
// likes later in the hour could not be settled, and the list answered []
// not exact. A bucket's peaks are kept per slot of 10 minutes, and a
// window is bounded by the slot its start falls in.
func TestEarlyLikesDoNotHideTheNextHour(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("early"))
	create, rollUp := rollUps(t, db)
	hour := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for p := range 25 {
		id := fmt.Sprintf("likes:early-%d", p)
		create(id)
		rollUp(id, hour.Add(10*time.Second), 61)
	}
	create("likes:real")
	for i := range 50 {
		rollUp("likes:real", hour.Add(30*time.Minute+time.Duration(i)*30*time.Second), 1)
	}
	got, exact, err := windowstore.New(db, windows.UTC).RollingTop(context.Background(), windows.LastHour, hour.Add(80*time.Minute), 10, 10, "likes")
	if want := []windows.Ranked{{CounterID: "likes:real", Count: 50}}; err != nil || !exact || !slices.Equal(got, want) {
		t.Errorf("last_hour at 11:20: %v, exact %v, %v; want %v, exact", got, exact, err, want)
	}
}

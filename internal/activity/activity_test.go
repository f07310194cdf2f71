package activity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// index is the activity index in memory, one marker per counter as in
// Firestore: the run's logic is tested here; the index itself on the
// emulator (e2e) and in the simulation (internal/sim).
type index struct {
	mu       sync.Mutex
	markers  map[string]time.Time
	failMark string // Mark of this id fails
}

func (x *index) Markers(_ context.Context, after Cursor, until time.Time, limit int) ([]Marker, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []Marker
	for id, at := range x.markers {
		if after.Before(Cursor{At: at, ID: id}) && !at.After(until) {
			out = append(out, Marker{ID: id, At: at})
		}
	}
	slices.SortFunc(out, func(a, b Marker) int {
		if (Cursor{a.At, a.ID}).Before(Cursor{b.At, b.ID}) {
			return -1
		}
		return 1
	})
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func (x *index) Mark(_ context.Context, id string, at time.Time) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if id == x.failMark {
		return errors.New("mark failed")
	}
	x.markers[id] = at
	return nil
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// newIndex marks counters c0…c(n-1), a second apart from t0.
func newIndex(n int) *index {
	x := &index{markers: map[string]time.Time{}}
	for i := range n {
		x.markers[fmt.Sprintf("c%02d", i)] = t0.Add(time.Duration(i) * time.Second)
	}
	return x
}

func TestARunVisitsWhatWasMarkedUpToUntilOnce(t *testing.T) {
	for _, concurrency := range []int{1, 4} {
		x := newIndex(25)
		var mu sync.Mutex
		visited := map[string]int{}
		var saved []Cursor
		r := Run{Source: x, Page: 7, Concurrency: concurrency, Now: func() time.Time { return t0 },
			Heal: func(_ context.Context, id string) (time.Time, error) {
				mu.Lock()
				defer mu.Unlock()
				visited[id]++
				return time.Time{}, nil
			},
			Save: func(_ context.Context, c Cursor) error { saved = append(saved, c); return nil }}
		until := t0.Add(19 * time.Second) // c00…c19
		res, err := r.Do(context.Background(), Cursor{}, until, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Complete || res.Visited != 20 || res.Again != 0 || len(visited) != 20 || visited["c20"] != 0 {
			t.Errorf("concurrency %d: %+v, visited %v; want c00…c19 once each, complete", concurrency, res, visited)
		}
		for id, n := range visited {
			if n != 1 {
				t.Errorf("concurrency %d: %s visited %d times", concurrency, id, n)
			}
		}
		want := Cursor{At: until, ID: "c19"}
		if res.Cursor != want || len(saved) != 3 || saved[2] != want {
			t.Errorf("concurrency %d: cursor %v, saved %v; want %v after each of 3 pages", concurrency, res.Cursor, saved, want)
		}
		// The next run resumes after it: nothing new, nothing visited.
		again, err := r.Do(context.Background(), res.Cursor, until, t0.Add(time.Minute))
		if err != nil || again.Visited != 0 || !again.Complete {
			t.Errorf("concurrency %d: a second run %+v %v; want nothing visited", concurrency, again, err)
		}
	}
}

func TestWorkLeftIsMarkedForALaterRun(t *testing.T) {
	x := newIndex(3)
	later := t0.Add(time.Hour)
	now := t0.Add(time.Minute)
	r := Run{Source: x, Page: 10, Now: func() time.Time { return now },
		Heal: func(_ context.Context, id string) (time.Time, error) {
			switch id {
			case "c00":
				return later, nil // a merge due later
			case "c01":
				return time.Time{}, errors.New("unavailable")
			}
			return time.Time{}, nil
		}}
	res, err := r.Do(context.Background(), Cursor{}, t0.Add(10*time.Second), t0.Add(2*time.Minute))
	if err != nil || !res.Complete || res.Visited != 3 || res.Again != 2 || res.Failed != 0 {
		t.Fatalf("%+v %v; want 3 visited, 2 marked again", res, err)
	}
	if x.markers["c00"] != later || x.markers["c01"] != now || x.markers["c02"] != t0.Add(2*time.Second) {
		t.Errorf("markers %v; want c00 at its work's time, c01 (failed) now, c02 as it was", x.markers)
	}
}

func TestACounterThatCannotBeMarkedAgainKeepsTheCursorBeforeIt(t *testing.T) {
	x := newIndex(6)
	x.failMark = "c04"
	r := Run{Source: x, Page: 3, Now: func() time.Time { return t0 },
		Heal: func(_ context.Context, id string) (time.Time, error) {
			if id == "c04" {
				return time.Time{}, errors.New("unavailable")
			}
			return time.Time{}, nil
		}}
	res, err := r.Do(context.Background(), Cursor{}, t0.Add(time.Minute), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// The first page (c00…c02) is done; the second failed at c04, so the
	// cursor stays after c02 and the next run visits c03…c05 again.
	if res.Complete || res.Failed != 1 || res.Cursor != (Cursor{At: t0.Add(2 * time.Second), ID: "c02"}) {
		t.Errorf("%+v; want incomplete, 1 failed, the cursor after c02", res)
	}
}

func TestARunStopsAtItsBudget(t *testing.T) {
	x := newIndex(10)
	clock := t0
	r := Run{Source: x, Page: 2, Now: func() time.Time { return clock },
		Heal: func(context.Context, string) (time.Time, error) {
			clock = clock.Add(time.Second)
			return time.Time{}, nil
		}}
	res, err := r.Do(context.Background(), Cursor{}, t0.Add(time.Hour), t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Pages of two, each taking 2 s of the 3 s budget: two pages.
	if res.Complete || res.Visited != 4 || res.Cursor.ID != "c03" {
		t.Errorf("%+v; want 4 visited, stopped after c03", res)
	}
}

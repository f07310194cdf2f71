// Package activity is how reconcile finds its work among any number of
// counters: an index of recent activity, one marker per counter, which the
// commits that write a counter's shards keep current, and a run that
// visits the counters marked since the last run, and only those.
//
// A marker is the counter's document in the activity collection, with a
// time and a random shard value (sharded timestamps, so the index takes
// one range of writes per shard value and is no hotspot). An increment's
// commit writes it when its instance has not marked the counter for
// ActivityEvery (ten roll-up cadences): at most one write per active
// counter per ActivityEvery per instance,
// in a commit that happens anyway. A deletion marks its counter at
// purge_after and a shrink at merge_until: when there is work to finish.
//
// A run visits the markers from its cursor up to now minus a settling
// time, oldest first, and heals each counter: its roll-up from the shards'
// exact sum, its purge, its merge. The settling time exceeds the marking
// interval (plus clock skew and a commit's latency), so every write
// happened before the run that visits its counter's last marker: a
// counter whose last roll-up event was lost is healed by the next run
// after its marker settles, whatever the number of counters. An idle
// counter has no marker to visit: it costs nothing.
package activity

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Cursor is a position in the markers' order: their time, then the
// counter id.
type Cursor struct {
	At time.Time
	ID string
}

// Before reports whether c comes before d.
func (c Cursor) Before(d Cursor) bool {
	return c.At.Before(d.At) || c.At.Equal(d.At) && c.ID < d.ID
}

// Marker says counter ID had its shards written, or has work due, at At.
type Marker struct {
	ID string
	At time.Time
}

// Source is the activity index (internal/store/rollupstore's markers).
type Source interface {
	// Markers returns up to limit markers after the cursor with a time
	// at or before until, oldest first, and whether there are more.
	Markers(ctx context.Context, after Cursor, until time.Time, limit int) ([]Marker, bool, error)
	// Mark marks counter id at at: it is to be visited again then.
	Mark(ctx context.Context, id string, at time.Time) error
}

// Heal does a counter's due work; again, when not zero, is when it has
// more (a purge to finish, a merge after merge_until). A counter that is
// gone is no error: there is nothing left to do.
type Heal func(ctx context.Context, id string) (again time.Time, err error)

// Run is one scheduled run: Stop ends it (its budget), Page and
// Concurrency size its work.
type Run struct {
	Source      Source
	Heal        Heal
	Page        int
	Concurrency int
	// Now is the run's clock (the simulation's is virtual).
	Now func() time.Time
	// Save, when set, stores the cursor after each page, so a run cut
	// short (its function's timeout) keeps what it did.
	Save func(ctx context.Context, c Cursor) error
}

// Result is what a run did: the counters visited, those marked again (to
// finish later, or after an error), those it could not even mark again
// (the run stops before them). Complete is true when it reached until:
// every counter marked up to then was visited.
type Result struct {
	Visited, Again, Failed int
	Complete               bool
	Cursor                 Cursor
}

// Do visits the markers after from up to until, until stop, and returns
// where the next run resumes. A counter whose healing fails, or has more
// to do, is marked again (now, or when its work is due), so a later run
// visits it.
func (r Run) Do(ctx context.Context, from Cursor, until, stop time.Time) (Result, error) {
	res := Result{Cursor: from}
	for r.Now().Before(stop) {
		markers, more, err := r.Source.Markers(ctx, res.Cursor, until, r.Page)
		if err != nil {
			return res, err
		}
		var mu sync.Mutex
		visit := func(m Marker) {
			again, err := r.Heal(ctx, m.ID)
			if err != nil {
				again = r.Now() // visit it again next run
			}
			if !again.IsZero() {
				err = r.Source.Mark(ctx, m.ID, again) // a failure here fails the run: its cursor stays
			}
			mu.Lock()
			defer mu.Unlock()
			res.Visited++
			switch {
			case err != nil:
				res.Failed++
			case !again.IsZero():
				res.Again++
			}
		}
		if r.Concurrency <= 1 {
			for _, m := range markers {
				visit(m) // in the caller's goroutine (the simulation's actors are one each)
			}
		} else {
			var g errgroup.Group
			g.SetLimit(r.Concurrency)
			for _, m := range markers {
				g.Go(func() error { visit(m); return nil })
			}
			_ = g.Wait() // visit returns no error: it counts them
		}
		if res.Failed > 0 {
			return res, nil // the cursor stays before the markers that failed
		}
		if len(markers) > 0 {
			last := markers[len(markers)-1]
			res.Cursor = Cursor{At: last.At, ID: last.ID}
			if r.Save != nil {
				if err := r.Save(ctx, res.Cursor); err != nil {
					return res, err
				}
			}
		}
		if !more {
			res.Complete = true
			return res, nil
		}
	}
	return res, nil
}

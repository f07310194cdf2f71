package windowstore

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/errgroup"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// RollingTop is one round of a threshold algorithm over a rolling window:
// the top limit ranked counters (of kind, when not "") by their count in
// the window, and whether the answer is exact. The window starts in slot
// s of the List bucket before the current one (or in the current one), and
// a counter's count in it is at most its carry of slot s in the current
// bucket (the bucket before's peak from slot s on, at least 0, plus the
// current bucket's count: a peak counts only as far as the change after
// it leaves it), or, when it changed in no bucket since, its open peak of
// slot s in the bucket before (windows.Peak). So the depth first of the
// current bucket by that carry and of the bucket before by that open peak
// are the candidates, each summed exactly over the window with one
// aggregation, at once; a counter beyond both lists counts at most the
// larger of their last values (the bound), and, with a count equal to
// it, comes after the smaller of their last ids (lists tie by id). So
// churn and likes held across the boundary raise the bound only by the
// likes still held, whose counts are real (docs/design/windows.md). A
// candidate whose sum fails (a deadline an attacker's wide lists made
// near) counts as its list's value. When it is not exact, the answer is
// the counters sure of their place only, and a deeper round may settle
// the rest. It reads at most 2 × depth documents and as many
// aggregations (while the current bucket holds buckets of the version
// before carries, see upgrade.go: 3 × depth each; the instance's look
// for them is its own), and depth documents more when its first list's
// read lands in the next bucket (readBounded).
func (s *Store) RollingTop(ctx context.Context, r windows.Rolling, now time.Time, depth, limit int, kind string) ([]windows.Ranked, bool, error) {
	b, _, err := s.readBounded(ctx, r, now, depth, kind, nil)
	if err != nil {
		return nil, false, err
	}
	from, to := r.Start(s.cal, now), s.listed(r.List, now)
	sums, unsummed, err := within(ctx, b.candidates(), func(ctx context.Context, id string) (int64, error) {
		return s.sumSpan(ctx, id, r.Sum, from, to, b.at)
	})
	if err != nil {
		return nil, false, err
	}
	b.raise(unsummed)
	out := positive(sums)
	settled := sort.Search(len(out), func(i int) bool { return b.beyond(out[i]) })
	if settled >= limit {
		return out[:limit], true, nil
	}
	return out[:settled], b.bound == 0 && len(unsummed) == 0, nil
}

// bounded are the lists of a rolling window's candidates, read to depth,
// and what a counter beyond them counts at most (bound), coming after cut
// when it counts that much ("": it may come anywhere among them).
type bounded struct {
	ranked []([]windows.Ranked)
	depth  int
	old    bool // a list by count too (upgrade.go)
	bound  int64
	cut    string
	// at is the read time of the lists, at which the candidates are
	// summed: a roll-up closing a counter's peak in the bucket before and
	// starting its carry in the current one, in one commit, is seen by
	// every list or by none.
	at time.Time
}

// lateRead is how far past a request's time a read of its lists may land
// and be taken as late (a deeper round's, under FIRESTORE_DEADLINE's 5
// minutes at most): Firestore reads at a time of the last hour. Further,
// the request's clock is not the read's (a test's).
const lateRead = time.Hour

// readBounded reads the lists of rolling window r at now (of kind, when
// not "") to depth, and extra lists beside them, at one read time: the
// first list's, the others then at once; or, when the first read landed
// in the next bucket, the current bucket's last moment: a roll-up there
// may have closed peaks the lists hold and carried them into a bucket
// none reads (the first list read again: depth documents more).
func (s *Store) readBounded(ctx context.Context, r windows.Rolling, now time.Time, depth int, kind string, extra []list) (bounded, [][]windows.Ranked, error) {
	lists := s.rollingLists(r, now)
	first, at, err := s.top(ctx, r.List, lists[0].start, depth, kind, lists[0].by, time.Time{})
	if err != nil {
		return bounded{}, nil, err
	}
	if end := s.listed(r.List, now); !at.Before(end) && at.Sub(now) < lateRead {
		at = end.Add(-time.Microsecond)
		if first, _, err = s.top(ctx, r.List, lists[0].start, depth, kind, lists[0].by, at); err != nil {
			return bounded{}, nil, err
		}
	}
	b := bounded{depth: depth, at: at}
	if len(lists) == 2 {
		if b.old = s.holdsOld(ctx, r.List, lists[0].start, at); b.old {
			lists = append(lists, list{lists[0].start, ByCount})
		}
	}
	rest, err := s.tops(ctx, r.List, append(lists[1:], extra...), depth, kind, at)
	if err != nil {
		return bounded{}, nil, err
	}
	ranked := append([][]windows.Ranked{first}, rest...)
	b.ranked = ranked[:len(lists)]
	b.bound, b.cut = boundOf(b.ranked[:min(len(b.ranked), 2)], depth)
	if b.old { // a bound of two lists' values: nothing at it is settled
		if v := tail(b.ranked[1], depth) + tail(b.ranked[2], depth); v >= b.bound && v > 0 {
			b.bound, b.cut = v, ""
		}
	}
	return b, ranked[len(lists):], nil
}

// candidates are the counters of the lists, each once.
func (b *bounded) candidates() []string { return candidates(b.ranked) }

// raise raises the bound by the candidates whose count is not known: each
// counts at most its lists' values, at its id.
func (b *bounded) raise(unknown []string) {
	for _, id := range unknown {
		v := listed(b.ranked, id)
		if b.old {
			v = oldBound(b.ranked, b.depth, id)
		}
		switch {
		case v > b.bound:
			b.bound, b.cut = v, id
		case v == b.bound && v > 0:
			b.cut = min(b.cut, id)
		}
	}
}

// beyond reports whether a counter beyond the lists may rank before r.
func (b *bounded) beyond(r windows.Ranked) bool {
	return b.bound > 0 && (r.Count < b.bound || r.Count == b.bound && r.CounterID > b.cut)
}

// rollingLists are the lists a rolling window's candidates are read
// from: the current bucket by carry, and the bucket before by open peak,
// of the slot holding the window's start; the current one alone when the
// window starts with it (by count) or inside it (by open peak: a day of
// 25 hours).
func (s *Store) rollingLists(r windows.Rolling, now time.Time) []list {
	from, current := r.Start(s.cal, now), s.cal.Start(r.List, now)
	switch {
	case from.Equal(current):
		return []list{{current, ByCount}}
	case from.After(current):
		return []list{{current, ByPeak(s.cal.Slot(r.List, current, from))}}
	}
	before := s.cal.Start(r.List, from) // the bucket before the current one (Rolling.Start)
	slot := s.cal.Slot(r.List, before, from)
	return []list{{current, ByCarry(slot)}, {before, ByPeak(slot)}}
}

// boundOf is what a counter beyond rankings (each read to depth) counts
// at most, and the id it comes after when it counts that much: the
// largest of their last values, and the smallest last id of those ending
// at it (a ranking ties by id). 0 when every one ended before its depth.
func boundOf(rankings [][]windows.Ranked, depth int) (int64, string) {
	var bound int64
	cut := ""
	for _, rs := range rankings {
		if t := tail(rs, depth); t > bound {
			bound, cut = t, rs[len(rs)-1].CounterID
		} else if t == bound && t > 0 && rs[len(rs)-1].CounterID < cut {
			cut = rs[len(rs)-1].CounterID
		}
	}
	return bound, cut
}

// listed is the largest value counter id has in rankings.
func listed(rankings [][]windows.Ranked, id string) int64 {
	var v int64
	for _, rs := range rankings {
		for _, r := range rs {
			if r.CounterID == id {
				v = max(v, r.Count)
			}
		}
	}
	return v
}

// positive are the counters of sums that counted, highest first, ties by
// id: a ranking's order.
func positive(sums map[string]int64) []windows.Ranked {
	var out []windows.Ranked
	for id, n := range sums {
		if n > 0 {
			out = append(out, windows.Ranked{CounterID: id, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b windows.Ranked) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.CounterID, b.CounterID))
	})
	return out
}

// atOnce is how many candidates a ranking sums at once.
const atOnce = 16

// within runs f for each of ids, atOnce at a time, within half what is
// left of ctx's deadline: the results, and the ids whose f was not done in
// time or met a failure a retry may fix (UNAVAILABLE: a ranking bounds
// those by their lists' values); any other failure is the error.
func within[T any](ctx context.Context, ids []string, f func(ctx context.Context, id string) (T, error)) (map[string]T, []string, error) {
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(d)/2))
		defer cancel()
	}
	var mu sync.Mutex
	results := map[string]T{}
	var failed []string
	g := errgroup.Group{}
	g.SetLimit(atOnce)
	for _, id := range ids {
		g.Go(func() error {
			v, err := f(ctx, id)
			if err == nil {
				err = ctx.Err()
			}
			if err != nil && !errs.Is(err, errs.Unavailable) && ctx.Err() == nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, id)
			} else {
				results[id] = v
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	slices.Sort(failed)
	return results, failed, nil
}

// tail is the last value of a ranking read to depth: what any counter
// beyond it has at most (0 when it ended before the depth: the others
// have nothing positive).
func tail(rs []windows.Ranked, depth int) int64 {
	if len(rs) < depth || len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Count
}

// listed is when the bucket of g holding now ends: a ranking's lists are
// of the buckets up to it, and so are its sums, however late its reads
// land (a read past the hour would sum minutes no list of the hour holds).
func (s *Store) listed(g windows.Granularity, now time.Time) time.Time {
	return s.cal.Step(g, s.cal.Start(g, now), 1)
}

// sumSpan returns counter id's count in its buckets of g from from to
// before to, at read time at (zero: now): one aggregation.
func (s *Store) sumSpan(ctx context.Context, id string, g windows.Granularity, from, to, at time.Time) (int64, error) {
	v, err := s.db.SumOf(ctx, s.SpanQuery(id, g, from, to), dm.FieldCount, at)
	return v, fs.Classify(err, "sum the window of "+id)
}

// SpanQuery is counter id's buckets of g from from to before to.
func (s *Store) SpanQuery(id string, g windows.Granularity, from, to time.Time) firestore.Query {
	return s.db.Collection(dm.UnderCounter(id, dm.Windows)).
		Where(dm.FieldGranularity, "==", string(g)).Where(dm.FieldStart, ">=", from).Where(dm.FieldStart, "<", to).OrderBy(dm.FieldStart, firestore.Asc)
}

// list is a ranking of one bucket to read: its start, and what by.
type list struct {
	start time.Time
	by    By
}

// tops reads each of lists of granularity g to depth (of kind, when not
// ""), a query each, at once, at read time at.
func (s *Store) tops(ctx context.Context, g windows.Granularity, lists []list, depth int, kind string, at time.Time) ([][]windows.Ranked, error) {
	out := make([][]windows.Ranked, len(lists))
	eg, ctx := errgroup.WithContext(ctx)
	for i, l := range lists {
		eg.Go(func() error {
			var err error
			out[i], _, err = s.top(ctx, g, l.start, depth, kind, l.by, at)
			return err
		})
	}
	return out, eg.Wait()
}

// candidates are the counters of rankings, each once, in their order.
func candidates(rankings [][]windows.Ranked) []string {
	var out []string
	for _, c := range slices.Concat(rankings...) {
		if !slices.Contains(out, c.CounterID) {
			out = append(out, c.CounterID)
		}
	}
	return out
}

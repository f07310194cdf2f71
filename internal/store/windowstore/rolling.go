package windowstore

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// RollingTop is one round of a threshold algorithm over a rolling window:
// the top limit ranked counters (of kind, when not "") by their count in
// the window, and whether the answer is exact. The window lies in the
// List buckets of now and of before; a counter's count in it is at most
// its count in the current one (which holds nothing later than now) plus,
// of the previous one, its peak of the slot holding the window's start
// (the most a run of its changes from that slot on adds: the window
// covers such a run) and its gross (the changes that added, of roll-ups
// of before peaks, which a peak may have missed). So the depth first of
// the current bucket by count and of the previous one by that peak and by
// gross are the candidates, each summed exactly over the window with one
// aggregation; a counter beyond the lists counts at most the sum of their
// last values (the bound). When it is not exact, the answer is the
// counters above the bound only, so none is left out while one it
// outranks is in, and a deeper round may settle the rest. It reads at
// most 3 × depth documents and as many aggregations.
func (s *Store) RollingTop(ctx context.Context, r windows.Rolling, now time.Time, depth, limit int, kind string) ([]windows.Ranked, bool, error) {
	current := s.cal.Start(r.List, now)
	previous := s.cal.Start(r.List, r.From(now)) // the bucket the window starts in (never two back: no day is shorter than its 23 hours before the current one)
	if !previous.Before(current) {
		previous = s.cal.Step(r.List, current, -1) // it starts in the current one: the previous holds none of it, and its lists are skipped
	}
	lists := []list{{current, ByCount}}
	if slot := s.cal.Slot(r.List, previous, r.From(now)); slot < windows.PeakSlots {
		lists = append(lists, list{previous, ByPeak(slot)}, list{previous, ByGross})
	}
	ranked, err := s.tops(ctx, r.List, lists, depth, kind)
	if err != nil {
		return nil, false, err
	}
	bound := int64(0)
	for _, rs := range ranked {
		bound += tail(rs, depth)
	}
	var out []windows.Ranked
	for _, id := range candidates(ranked) {
		n, err := s.sumSince(ctx, id, r.Sum, r.From(now))
		if err != nil {
			return nil, false, err
		}
		if n > 0 {
			out = append(out, windows.Ranked{CounterID: id, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b windows.Ranked) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.CounterID, b.CounterID))
	})
	// Settled: above the bound (a tie at it could rank before, by id).
	settled := len(out)
	if bound > 0 {
		settled = sort.Search(len(out), func(i int) bool { return out[i].Count <= bound })
	}
	if settled >= limit {
		return out[:limit], true, nil
	}
	return out[:settled], bound == 0, nil
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

// sumSince returns counter id's count in its buckets of g from from on:
// one aggregation.
func (s *Store) sumSince(ctx context.Context, id string, g windows.Granularity, from time.Time) (int64, error) {
	v, err := s.db.SumOf(ctx, s.RollingQuery(id, g, from), dm.FieldCount)
	return v, fs.Classify(err, "sum the window of "+id)
}

// RollingQuery is sumSince's query, for the index check.
func (s *Store) RollingQuery(id string, g windows.Granularity, from time.Time) firestore.Query {
	return s.db.Collection(dm.UnderCounter(id, dm.Windows)).
		Where(dm.FieldGranularity, "==", string(g)).Where(dm.FieldStart, ">=", from).OrderBy(dm.FieldStart, firestore.Asc)
}

// list is a ranking of one bucket to read: its start, and what by.
type list struct {
	start time.Time
	by    By
}

// tops reads each of lists of granularity g to depth (of kind, when not
// ""), a query each.
func (s *Store) tops(ctx context.Context, g windows.Granularity, lists []list, depth int, kind string) ([][]windows.Ranked, error) {
	out := make([][]windows.Ranked, len(lists))
	for i, l := range lists {
		var err error
		if out[i], err = s.top(ctx, g, l.start, depth, kind, l.by); err != nil {
			return nil, err
		}
	}
	return out, nil
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

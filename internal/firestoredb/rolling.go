package firestoredb

import (
	"context"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/windows"
)

// Rolling is a window that ends now: its buckets of Sum, the last Span of
// them (the current one, partial, included), ranked from the two buckets
// of List that hold them.
type Rolling struct {
	Name string
	Sum  windows.Granularity
	Span int
	List windows.Granularity
}

// The rolling windows topCounters ranks: the last 60 minutes, from minute
// buckets, and the last 24 hours, from hour buckets.
var (
	LastHour = Rolling{Name: "last_hour", Sum: windows.Minute, Span: 60, List: windows.Hour}
	LastDay  = Rolling{Name: "last_day", Sum: windows.Hour, Span: 24, List: windows.Day}
)

// From is the start of the window's first bucket, for a window ending at
// now.
func (r Rolling) From(now time.Time) time.Time {
	return r.Sum.Start(now).Add(-time.Duration(r.Span-1) * r.Sum.Length())
}

// RollingTop is one round of a threshold algorithm over a rolling window:
// the top limit ranked counters (of kind, when not "") by their count in
// the window, and whether the answer is exact. The window lies in the
// List buckets of now and of before; a counter's count in it is at most
// its count in the current one (which holds nothing later than now) plus
// the gross of the previous one (the changes that added: whatever part of
// it the window covers, it cannot count more). So the depth first of each
// bucket, by count and by gross, are the candidates, each summed exactly
// over the window with one aggregation; a counter beyond both lists counts
// at most the sum of their last values, and when the last of the top limit
// counts more, no other can pass or tie it: exact. Otherwise a deeper round
// may settle it. It reads at most 2 × depth documents and as many
// aggregations.
func (s *Windows) RollingTop(ctx context.Context, r Rolling, now time.Time, depth, limit int, kind string) ([]Ranked, bool, error) {
	current, err := s.top(ctx, r.List, r.List.Start(now), depth, kind, ByCount)
	if err != nil {
		return nil, false, err
	}
	previous, err := s.top(ctx, r.List, r.List.Start(now).Add(-r.List.Length()), depth, kind, ByGross)
	if err != nil {
		return nil, false, err
	}
	bound := tail(current, depth) + tail(previous, depth)
	seen := map[string]bool{}
	var out []Ranked
	for _, c := range append(current, previous...) {
		if seen[c.CounterID] {
			continue
		}
		seen[c.CounterID] = true
		n, err := s.sumSince(ctx, c.CounterID, r.Sum, r.From(now))
		if err != nil {
			return nil, false, err
		}
		if n > 0 {
			out = append(out, Ranked{CounterID: c.CounterID, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b Ranked) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.CounterID, b.CounterID)
	})
	exact := bound <= 0 || len(out) >= limit && out[limit-1].Count > bound // a tie at the bound could rank before, by id
	return out[:min(limit, len(out))], exact, nil
}

// tail is the last value of a ranking read to depth: what any counter
// beyond it has at most (0 when it ended before the depth: the others
// have nothing positive).
func tail(rs []Ranked, depth int) int64 {
	if len(rs) < depth || len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Count
}

// sumSince returns counter id's count in its buckets of g from from on:
// one aggregation.
func (s *Windows) sumSince(ctx context.Context, id string, g windows.Granularity, from time.Time) (int64, error) {
	v, err := s.db.sumOf(ctx, s.RollingQuery(id, g, from), fieldCount)
	return v, classify(err, "sum the window of "+id)
}

// RollingQuery is sumSince's query, for the index check.
func (s *Windows) RollingQuery(id string, g windows.Granularity, from time.Time) firestore.Query {
	return s.db.client.Collection(underCounter(id, WindowsCollection)).
		Where(fieldGranularity, "==", string(g)).Where(fieldStart, ">=", from).OrderBy(fieldStart, firestore.Asc)
}

package windowstore

import (
	"context"
	"slices"
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
// its count in the current one (which holds nothing later than now) plus
// the gross of the previous one (the changes that added: whatever part of
// it the window covers, it cannot count more). So the depth first of each
// bucket, by count and by gross, are the candidates, each summed exactly
// over the window with one aggregation; a counter beyond both lists counts
// at most the sum of their last values, and when the last of the top limit
// counts more, no other can pass or tie it: exact. Otherwise a deeper round
// may settle it. It reads at most 2 × depth documents and as many
// aggregations.
func (s *Store) RollingTop(ctx context.Context, r windows.Rolling, now time.Time, depth, limit int, kind string) ([]windows.Ranked, bool, error) {
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
	var out []windows.Ranked
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
			out = append(out, windows.Ranked{CounterID: c.CounterID, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b windows.Ranked) int {
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

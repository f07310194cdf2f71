package windowstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/errgroup"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// Rising ranks what is rising at now (windows.Rising): the ranked
// counters (of kind, when not "") with the highest positive score among
// the candidates, the depth first of the current hour and of the previous
// one by count and by rise (the roll-up's running estimate of the score,
// windows.Momentum, so a small counter that jumps is among them however
// many larger ones count more); each candidate's last 60 minutes and
// baseline are then summed exactly from its buckets, an aggregation
// each. It returns the candidates' number too, and reads at most 4 ×
// depth documents and 8 × depth aggregations.
func (s *Store) Rising(ctx context.Context, r windows.Rising, now time.Time, depth, limit int, kind string) ([]windows.Scored, int, error) {
	current := s.cal.Start(windows.Hour, now)
	ranked, err := s.tops(ctx, windows.Hour, []list{{current, ByRise}, {current, ByCount}, {current.Add(-time.Hour), ByRise}, {current.Add(-time.Hour), ByCount}}, depth, kind)
	if err != nil {
		return nil, 0, err
	}
	ids := candidates(ranked)
	scored := make([]windows.Scored, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(risingSums) // latency: the candidates are summed a few at a time, not one after the other
	for i, id := range ids {
		g.Go(func() (err error) {
			scored[i], err = s.score(gctx, r, now, id)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	out := slices.DeleteFunc(scored, func(s windows.Scored) bool { return s.Score <= 0 })
	slices.SortFunc(out, func(a, b windows.Scored) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.CounterID, b.CounterID))
	})
	return out[:min(limit, len(out))], len(ids), nil
}

// risingSums is how many candidates a rising ranking sums at once.
const risingSums = 8

// score is counter id's rising score at now: its last 60 minutes and its
// baseline, summed exactly from its buckets (an aggregation each).
func (s *Store) score(ctx context.Context, r windows.Rising, now time.Time, id string) (windows.Scored, error) {
	x, err := s.sumSince(ctx, id, windows.Minute, windows.LastHour.From(now))
	if err != nil {
		return windows.Scored{}, err
	}
	from, to := r.Baseline(now)
	base, err := s.db.SumOf(ctx, s.SpanQuery(id, windows.Hour, from, to), dm.FieldCount)
	if err != nil {
		return windows.Scored{}, fs.Classify(err, "sum the baseline of "+id)
	}
	return windows.Scored{Ranked: windows.Ranked{CounterID: id, Count: x},
		Baseline: max(float64(base), 0) / float64(r.BaselineHours), Score: r.Score(x, base)}, nil
}

// SpanQuery is counter id's buckets of g from from to before to.
func (s *Store) SpanQuery(id string, g windows.Granularity, from, to time.Time) firestore.Query {
	return s.RollingQuery(id, g, from).Where(dm.FieldStart, "<", to)
}

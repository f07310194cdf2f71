package windowstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/windows"
)

// Rising ranks what is rising at now (windows.Rising): the ranked
// counters (of kind, when not "") with the highest positive score among
// the candidates, and whether no other counter can score above the last
// one listed (exact). The candidates are those of a ranking of the last
// 60 minutes (RollingTop, at depth) and the depth first of the current
// and the previous hour by rise (the roll-up's running estimate of the
// score, windows.Momentum, so a small counter that jumps is among them
// however many larger ones count more); each candidate's last 60 minutes
// and baseline are summed exactly from its buckets, an aggregation each,
// at once. A counter beyond them counts at most the ranking's bound in
// the last 60 minutes, so it scores at most Rising.Most of it. A
// candidate whose sums fail counts as its lists' value and is not
// listed. It returns the candidates' number too, and reads at most 4 ×
// depth documents and 8 × depth aggregations (5 and 10 while buckets of
// the version before carries are current, upgrade.go, whose look for
// them is the instance's own).
func (s *Store) Rising(ctx context.Context, r windows.Rising, now time.Time, depth, limit int, kind string) ([]windows.Scored, bool, int, error) {
	current := s.cal.Start(windows.Hour, now)
	b, rises, err := s.readBounded(ctx, windows.LastHour, now, depth, kind, []list{{current, ByRise}, {current.Add(-time.Hour), ByRise}})
	if err != nil {
		return nil, false, 0, err
	}
	ids := candidates(append(slices.Clone(b.ranked), rises...))
	scores, unscored, err := within(ctx, ids, func(ctx context.Context, id string) (windows.Scored, error) { return s.score(ctx, r, now, b.at, id) })
	if err != nil {
		return nil, false, 0, err
	}
	b.raise(unscored)
	var out []windows.Scored
	for _, sc := range scores {
		if sc.Score > 0 {
			out = append(out, sc)
		}
	}
	slices.SortFunc(out, func(a, b windows.Scored) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.CounterID, b.CounterID))
	})
	out = out[:min(limit, len(out))]
	most := r.Most(b.bound) // what a counter beyond the candidates scores at most
	exact := len(unscored) == 0 && (len(out) == limit && out[limit-1].Score > most || most <= 0)
	return out, exact, len(ids), nil
}

// score is counter id's rising score at now: its last 60 minutes and its
// baseline, summed exactly from its buckets (an aggregation each) at read
// time at.
func (s *Store) score(ctx context.Context, r windows.Rising, now, at time.Time, id string) (windows.Scored, error) {
	x, err := s.sumSpan(ctx, id, windows.Minute, windows.LastHour.From(now), s.listed(windows.LastHour.List, now), at)
	if err != nil {
		return windows.Scored{}, err
	}
	from, to := r.Baseline(now)
	base, err := s.sumSpan(ctx, id, windows.Hour, from, to, at)
	if err != nil {
		return windows.Scored{}, err
	}
	return windows.Scored{Ranked: windows.Ranked{CounterID: id, Count: x},
		Baseline: max(float64(base), 0) / float64(r.BaselineHours), Score: r.Score(x, base)}, nil
}

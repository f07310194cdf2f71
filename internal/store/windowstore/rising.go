package windowstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

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
	current := windows.Hour.Start(now)
	seen := map[string]bool{}
	var out []windows.Scored
	for _, list := range []struct {
		start time.Time
		by    By
	}{{current, ByRise}, {current, ByCount}, {current.Add(-time.Hour), ByRise}, {current.Add(-time.Hour), ByCount}} {
		ranked, err := s.top(ctx, windows.Hour, list.start, depth, kind, list.by)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range ranked {
			if seen[c.CounterID] {
				continue
			}
			seen[c.CounterID] = true
			x, err := s.sumSince(ctx, c.CounterID, windows.Minute, windows.LastHour.From(now))
			if err != nil {
				return nil, 0, err
			}
			from, to := r.Baseline(now)
			base, err := s.db.SumOf(ctx, s.SpanQuery(c.CounterID, windows.Hour, from, to), dm.FieldCount)
			if err != nil {
				return nil, 0, fs.Classify(err, "sum the baseline of "+c.CounterID)
			}
			if score := r.Score(x, base); score > 0 {
				out = append(out, windows.Scored{Ranked: windows.Ranked{CounterID: c.CounterID, Count: x},
					Baseline: max(float64(base), 0) / float64(r.BaselineHours), Score: score})
			}
		}
	}
	slices.SortFunc(out, func(a, b windows.Scored) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return strings.Compare(a.CounterID, b.CounterID)
	})
	return out[:min(limit, len(out))], len(seen), nil
}

// SpanQuery is counter id's buckets of g from from to before to.
func (s *Store) SpanQuery(id string, g windows.Granularity, from, to time.Time) firestore.Query {
	return s.RollingQuery(id, g, from).Where(dm.FieldStart, "<", to)
}

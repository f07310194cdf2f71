package windowstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// DistinctHistory returns distinct counter id's estimate of the distinct
// members of each bucket of g starting at starts (consecutive, oldest
// first), each its shards' sketches merged, and of all of them together
// (their union, a member of several buckets once). It reads the sketches
// that exist: at most one a shard a bucket.
func (s *Store) DistinctHistory(ctx context.Context, id string, g windows.Granularity, starts []time.Time) ([]windows.Tally, int64, error) {
	if len(starts) == 0 {
		return nil, 0, nil
	}
	byStart, err := shared.SketchesByStart(ctx, s.db, id, g, starts[0], starts[len(starts)-1], time.Time{})
	if err != nil {
		return nil, 0, err
	}
	union := distinct.New()
	for _, start := range slices.SortedFunc(maps.Keys(byStart), time.Time.Compare) {
		if err := union.Merge(byStart[start]); err != nil {
			return nil, 0, err
		}
	}
	out := make([]windows.Tally, len(starts))
	for i, st := range starts {
		if sk := byStart[st.UTC()]; sk != nil {
			out[i].Count = sk.Estimate()
		}
	}
	return out, union.Estimate(), nil
}

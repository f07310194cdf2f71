package windowstore

import (
	"context"
	"time"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
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
	docs, err := s.db.Query(ctx, shared.SketchesQuery(s.db, id, g, starts[0], starts[len(starts)-1]))
	if err != nil {
		return nil, 0, fs.Classify(err, "read the sketches of "+id)
	}
	byStart, union := map[time.Time]*distinct.Sketch{}, distinct.New()
	for _, pd := range docs {
		sk, err := shared.SketchOf(pd)
		start := fs.DocOf(pd).Time(dm.FieldStart).UTC()
		if byStart[start] == nil {
			byStart[start] = distinct.New()
		}
		if err == nil {
			err = byStart[start].Merge(sk)
		}
		if err == nil {
			err = union.Merge(sk)
		}
		if err != nil {
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

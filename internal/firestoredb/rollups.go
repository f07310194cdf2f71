package firestoredb

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
)

// Rollups are what the roll-up and reconcile read and write: the counter
// document as it is now, the sums of its shards, its members, its roll-up
// slots, and the roll-up's one write (rollup.Store).
type Rollups struct{ *base }

// Read reads the counter document now; NOT_FOUND if the counter does not
// exist or is deleted.
func (s *Rollups) Read(ctx context.Context, id string) (counter.Counter, error) {
	return s.live(ctx, id)
}

// Sum returns the exact value of a counter now, a SUM over its shards,
// with the snapshot's read time.
func (s *Rollups) Sum(ctx context.Context, id string) (int64, time.Time, error) {
	return s.sum(ctx, id, time.Time{})
}

// Activity returns the commits made to a counter's shards, and how many of
// them followed a slow or refused commit: evidence for automatic sharding.
// Every increment writes both fields (shardWrite), so the shards it counts
// are the shards written since it existed.
func (s *Rollups) Activity(ctx context.Context, id string) (commits, slow int64, err error) {
	v, _, err := s.db.sum(ctx, underCounter(id, ShardsCollection), time.Time{}, fieldCommits, fieldSlow)
	if err != nil {
		return 0, 0, classify(err, "sum the shard activity of "+id)
	}
	return v[0], v[1], nil
}

// MergeShards moves shards to..from-1 of counter id into shards k mod to:
// the last merge of a shrink.
func (s *Rollups) MergeShards(ctx context.Context, id string, to, from int) (int, error) {
	return s.mergeShards(ctx, id, to, from)
}

// Purge goes on deleting what is under deleted counter id (Counters.Purge).
func (s *Rollups) Purge(ctx context.Context, id string) (bool, error) {
	return (&Counters{s.base}).Purge(ctx, id)
}

// Package rollupstore keeps what the roll-up and reconcile read and
// write (rollup.Store): the counter document's roll-up and the window
// buckets it adds to, in one commit; the shards' sums; roll-up slots; the
// activity index reconcile visits; and reconcile's cursor.
package rollupstore

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// Store is the roll-up's and reconcile's data of one database.
type Store struct {
	db       *fs.DB
	counters *counterstore.Store
	// windows keeps the roll-up's changes in minute, hour and day buckets
	// for so long; nil turns them off (WINDOWS=off).
	windows windows.Retention
}

// New returns the store on db, whose counters are those of counters.
func New(db *fs.DB, counters *counterstore.Store, retention windows.Retention) *Store {
	return &Store{db: db, counters: counters, windows: retention}
}

// Read reads the counter document now; NOT_FOUND if the counter does not
// exist or is deleted.
func (s *Store) Read(ctx context.Context, id string) (counter.Counter, error) {
	return s.counters.Live(ctx, id)
}

// Sum returns the exact value of counter c now, a SUM over its shards
// (and of a choice counter each choice's, at the same read time; of a
// distinct counter, the estimate of its shards' sketches), with the
// snapshot's read time.
func (s *Store) Sum(ctx context.Context, c counter.Counter) (counter.Sums, time.Time, error) {
	if c.Distinct {
		estimate, at, err := s.counters.Estimate(ctx, c, time.Time{})
		return counter.Sums{Count: estimate}, at, err
	}
	total, at, err := s.counters.Sum(ctx, c.ID, time.Time{})
	sums := counter.Sums{Count: total}
	if err == nil && c.Choices != nil {
		sums.Counts, err = s.counters.SumCounts(ctx, c, at)
	}
	return sums, at, err
}

// Members counts unique counter c's members at read time at, and of a
// choice counter those holding each choice.
func (s *Store) Members(ctx context.Context, c counter.Counter, at time.Time) (counter.Sums, error) {
	n, err := s.counters.MemberCount(ctx, c.ID, at)
	sums := counter.Sums{Count: n}
	if err == nil && c.Choices != nil {
		sums.Counts, err = s.counters.ChoiceCounts(ctx, c, at)
	}
	return sums, err
}

// NameMemberKinds is counterstore's.
func (s *Store) NameMemberKinds(ctx context.Context, c counter.Counter, max int) (bool, error) {
	return s.counters.NameMemberKinds(ctx, c, max)
}

// MergeShards moves shards to..from-1 of counter id into shards k mod to:
// the last merge of a shrink.
func (s *Store) MergeShards(ctx context.Context, id string, to, from int) (int, error) {
	return s.counters.MergeShards(ctx, id, to, from)
}

// Purge goes on deleting what is under deleted counter id.
func (s *Store) Purge(ctx context.Context, id string) (bool, error) {
	return s.counters.Purge(ctx, id)
}

// Activity returns the commits made to a counter's shards, and how many of
// them followed a slow or refused commit: evidence for automatic sharding.
// Every increment writes both fields (shardWrite), so the shards it counts
// are the shards written since it existed.
func (s *Store) Activity(ctx context.Context, id string) (commits, slow int64, err error) {
	v, _, err := s.db.Sum(ctx, dm.UnderCounter(id, dm.Shards), time.Time{}, dm.FieldCommits, dm.FieldSlow)
	if err != nil {
		return 0, 0, fs.Classify(err, "sum the shard activity of "+id)
	}
	return v[0], v[1], nil
}

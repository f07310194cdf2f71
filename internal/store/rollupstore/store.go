// Package rollupstore keeps what the roll-up and reconcile write and read
// of their own (with counterstore and memberstore, rollup.Store): the
// counter document's roll-up and the window buckets it adds to, in one
// commit; the shards' activity; roll-up slots; the activity index
// reconcile visits; and reconcile's cursor.
package rollupstore

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// Store is the roll-up's and reconcile's data of one database.
type Store struct {
	db   *fs.DB
	base *shared.Base
	opts Options
}

// Options configure a Store.
type Options struct {
	// Windows keeps the roll-up's changes in minute, hour and day buckets
	// for so long; nil turns them off (WINDOWS=off).
	Windows windows.Retention
	// Calendar says where buckets begin.
	Calendar windows.Calendar
	// Settle is how long after a bucket ends a view stamped in it may
	// commit (FIRESTORE_DEADLINE, and a second of the instances' clocks'
	// skew): a distinct counter's roll-up reaches back so long before the
	// roll-up before's read time (windows.Calendar.Reached). Zero: a
	// minute.
	Settle time.Duration
	// Remember, when set, is told of a counter document a roll-up wrote
	// with a new shard count (counterstore.Store.Remember: this instance's
	// cache holds what it wrote), from when the commit was sent.
	Remember func(c counter.Counter, sent time.Time)
}

// New returns the store on base.
func New(base *shared.Base, opts Options) *Store {
	if opts.Settle == 0 {
		opts.Settle = time.Minute
	}
	if opts.Remember == nil {
		opts.Remember = func(counter.Counter, time.Time) {}
	}
	return &Store{db: base.DB, base: base, opts: opts}
}

// Activity returns the commits made to a counter's shards, and how many of
// them followed a slow or refused commit: evidence for automatic sharding.
// Every increment writes both fields (shared.Base.ShardWrite, SketchWrite), so the shards it counts
// are the shards written since it existed.
func (s *Store) Activity(ctx context.Context, id string) (commits, slow int64, err error) {
	v, _, err := s.db.Sum(ctx, dm.UnderCounter(id, dm.Shards), time.Time{}, dm.FieldCommits, dm.FieldSlow)
	if err != nil {
		return 0, 0, fs.Classify(err, "sum the shard activity of "+id)
	}
	return v[0], v[1], nil
}

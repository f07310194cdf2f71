// Package shared is what the counters' stores share, below them all: the
// database, the stores' clock and randomness, and the writes several
// stores put in their commits under a counter (a shard's, a sketch's, the
// activity marker's). No store reaches a sibling for them.
package shared

import (
	"math/rand/v2"
	"strconv"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// Options configure a Base.
type Options struct {
	// Now is the stores' clock and IntN their random choice of one of n
	// for a key (a shard of a counter, a marker's shard value); nil:
	// time.Now and math/rand (the simulation's are virtual, and seeded per
	// key, so concurrent choices do not depend on their order).
	Now  func() time.Time
	IntN func(key string, n int) int
	// ActivityShards spreads activity markers over that many shard values
	// (ACTIVITY_SHARDS).
	ActivityShards int
}

// Base is one database's, as every store uses it.
type Base struct {
	DB   *fs.DB
	opts Options
}

// New returns the base of the stores on db.
func New(db *fs.DB, opts Options) *Base {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IntN == nil {
		opts.IntN = func(_ string, n int) int { return rand.IntN(n) }
	}
	opts.ActivityShards = max(1, opts.ActivityShards)
	return &Base{DB: db, opts: opts}
}

// Now is the stores' clock.
func (b *Base) Now() time.Time { return b.opts.Now() }

// IntN picks one of n for key (a shard of a counter).
func (b *Base) IntN(key string, n int) int { return b.opts.IntN(key, n) }

// ActivityShards is how many shard values markers are spread over.
func (b *Base) ActivityShards() int { return b.opts.ActivityShards }

// ShardChange is what one commit adds to a shard: its count, and the
// commit counters automatic sharding reads.
type ShardChange struct {
	Count, Commits, Slow int64
	// Counts are a choice counter's changes by choice.
	Counts map[string]int64
}

// ShardFields are the first transformed fields of ShardWrite, in the
// order of its transforms' results (a choice's, counts.*, sort after
// count).
var ShardFields = []string{dm.FieldCommits, dm.FieldCount}

// ShardWrite is the one write of a shard: count, commits and slow always,
// so a sum of several of them counts every shard written, and the counts
// of the choices it moves.
func (b *Base) ShardWrite(id string, k int, c ShardChange) *pb.Write {
	deltas := map[string]int64{dm.FieldCount: c.Count, dm.FieldCommits: c.Commits, dm.FieldSlow: c.Slow}
	for choice, n := range c.Counts {
		deltas[dm.FieldCountOf(choice)] = n
	}
	return fs.IncrementWrite(b.DB.Name(dm.Shard(id, k)), deltas)
}

// SketchWrite is the write of a distinct counter's shard k: its sketch's
// bytes, on the condition of the version the sketch was read at (zero:
// that the shard does not exist), and c's commits and slow.
func (b *Base) SketchWrite(id string, k int, sketch []byte, version time.Time, c ShardChange) *pb.Write {
	name, fields := b.DB.Name(dm.Shard(id, k)), map[string]*pb.Value{dm.FieldSketch: fs.BytesValue(sketch)}
	w := fs.CreateWrite(name, fields)
	if !version.IsZero() {
		w = fs.UpdateWrite(name, fields, []string{dm.FieldSketch}, version)
	}
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.Increment(dm.FieldCommits, c.Commits), fs.Increment(dm.FieldSlow, c.Slow)}
	return w
}

// ActivityWrite marks counter id in the activity index (internal/activity)
// at at, or at its commit's time when at is zero, on a random shard value.
func (b *Base) ActivityWrite(id string, at time.Time) *pb.Write {
	fields := map[string]*pb.Value{dm.FieldActivityShard: fs.StringValue(strconv.Itoa(b.IntN(id, b.ActivityShards())))}
	if !at.IsZero() {
		fields[dm.FieldActivityAt] = fs.TimeValue(at)
	}
	w := fs.SetFieldsWrite(b.DB.Name(dm.Marker(id)), fields)
	if at.IsZero() {
		w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldActivityAt)}
	}
	return w
}

// SketchOf decodes the sketch of a distinct counter's shard, or of one
// of its buckets (empty for a document that does not exist): DATA_LOSS
// when it holds none this version reads.
func SketchOf(pd *pb.Document) (*distinct.Sketch, error) {
	if pd == nil {
		return distinct.New(), nil
	}
	d := fs.DocOf(pd)
	sk, err := distinct.Parse(d.Bytes(dm.FieldSketch))
	if err == nil {
		err = d.Err()
	}
	if err != nil {
		return nil, errs.Wrap(errs.DataLoss, err, "%s holds no sketch of this version", pd.GetName())
	}
	return sk, nil
}

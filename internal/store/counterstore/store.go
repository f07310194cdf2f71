// Package counterstore keeps the counter documents and their life in
// Firestore: reading them (through this instance's cache), creating,
// resharding, resetting the ranking flag, deleting and purging them, and
// listing counters and members. It also builds the two writes other stores
// add to their commits under a counter: a shard's, and the activity
// marker's.
//
// A counter document read is cached for SHARD_COUNT_CACHE, from when the
// read began: reshards and deletions count on no instance using one
// longer (docs/design/lifecycle.md).
package counterstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
	"unsafe"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/retry"
	"github.com/shardcount/shardcount/internal/sizedlru"
	"github.com/shardcount/shardcount/internal/windows"
)

// Options configure a Store.
type Options struct {
	// ShardCountCache is how long a counter's document (its shard count,
	// owner and kind) is used before it is read again (SHARD_COUNT_CACHE).
	ShardCountCache time.Duration
	// ActivityShards spreads activity markers over that many shard values
	// (ACTIVITY_SHARDS).
	ActivityShards int
	// Kinds are the app's kinds: an absent counter of one reads as the
	// counter its first increment creates.
	Kinds counter.Kinds
	// Now is the store's clock and IntN its random choice of a shard (of
	// the counter or marker key); nil: time.Now and math/rand (the
	// simulation's are virtual, and seeded per key, so concurrent choices
	// do not depend on their order).
	Now  func() time.Time
	IntN func(key string, n int) int
}

// Store is the counter documents of one database, and what this instance
// remembers of them.
type Store struct {
	db     *fs.DB
	opts   Options
	cached *sizedlru.Cache[string, cachedCounter]
}

type cachedCounter struct {
	c       counter.Counter
	expires time.Time
}

// maxCached bounds the counters one instance remembers, and cacheShare
// the memory they take (a 16th of the instance's: 32 MiB of 512); the
// least recently used are forgotten first.
const (
	maxCached  = 100_000
	cacheShare = 1.0 / 16
)

// cachedSize is what a cached counter takes.
func cachedSize(id string, e cachedCounter) int {
	c := e.c
	return sizedlru.Entry + sizedlru.String(id) + int(unsafe.Sizeof(e)) + len(c.ID) + len(c.Owner) + len(c.Kind) +
		len(c.Reshard.Reason) + len(c.Peaks)*int(unsafe.Sizeof(windows.Peak{})+32)
}

// New returns the store on db.
func New(db *fs.DB, opts Options) *Store {
	cached := sizedlru.New(maxCached, sizedlru.Share(cacheShare), cachedSize)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IntN == nil {
		opts.IntN = func(_ string, n int) int { return rand.IntN(n) }
	}
	return &Store{db: db, opts: opts, cached: cached}
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.opts.Now() }

// IntN picks one of n for key (a shard of a counter).
func (s *Store) IntN(key string, n int) int { return s.opts.IntN(key, n) }

func (s *Store) name(path string) string { return s.db.Name(path) }

func notFound(id string) error { return errs.New(errs.NotFound, "counter %q does not exist", id) }

// Stored reads a counter's document now, a deleted counter's tombstone
// included (IsDeleted), and caches it.
func (s *Store) Stored(ctx context.Context, id string) (counter.Counter, error) {
	c, _, err := s.storedAt(ctx, id)
	return c, err
}

// storedAt is Stored, with the read's time: what a SUM at the same time
// sees of the shards is consistent with the document.
func (s *Store) storedAt(ctx context.Context, id string) (counter.Counter, time.Time, error) {
	start := s.Now()
	docs, at, err := s.db.GetAll(ctx, []string{s.name(dm.Counter(id))}, time.Time{})
	if err != nil {
		return counter.Counter{}, time.Time{}, fs.Classify(err, "read counter "+id)
	}
	if docs[0] == nil {
		s.cached.Remove(id)
		return counter.Counter{}, at, notFound(id)
	}
	c, err := decode(docs[0])
	if err != nil {
		return counter.Counter{}, at, err
	}
	s.Remember(c, start)
	return c, at, nil
}

// Live reads a counter's document now: NOT_FOUND if it does not exist or
// is deleted.
func (s *Store) Live(ctx context.Context, id string) (counter.Counter, error) {
	c, err := s.Stored(ctx, id)
	if err == nil && c.IsDeleted() {
		return counter.Counter{}, notFound(id)
	}
	return c, err
}

// LiveOrNew is Live, but for an absent counter of a declared kind: the
// counter its first increment creates, with a zero Version (it does not
// exist yet, and reads as 0). A deleted one stays NOT_FOUND.
func (s *Store) LiveOrNew(ctx context.Context, id string) (counter.Counter, error) {
	c, _, err := s.liveOrNew(ctx, id, s.Stored)
	return c, err
}

// LiveOrNewCached is LiveOrNew from this instance's cache, reading the
// document when the cache has none: reading it on every increment would
// cost a read each and load the very document the shards protect. It also
// returns until when the counter may be used as read: a resharded count
// reaches every instance within the cache's lifetime (which is why
// shrinking keeps merging), and a deleted id stays reserved, for that
// long. Its Count is the roll-up as of the read, possibly stale.
func (s *Store) LiveOrNewCached(ctx context.Context, id string) (counter.Counter, time.Time, error) {
	if e, ok := s.cached.Get(id); ok && s.Now().Before(e.expires) {
		c, _, err := s.liveOrNew(ctx, id, func(context.Context, string) (counter.Counter, error) { return e.c, nil })
		return c, e.expires, err
	}
	start := s.Now()
	c, _, err := s.liveOrNew(ctx, id, s.Stored)
	return c, start.Add(s.opts.ShardCountCache), err
}

func (s *Store) liveOrNew(ctx context.Context, id string, read func(context.Context, string) (counter.Counter, error)) (counter.Counter, bool, error) {
	c, err := read(ctx, id)
	if kind, ok := s.opts.Kinds.Of(id); ok && errs.Is(err, errs.NotFound) {
		return kind.Counter(id), true, nil
	}
	if err == nil && c.IsDeleted() {
		return counter.Counter{}, false, notFound(id)
	}
	return c, false, err
}

// Strong returns a live counter's document and its exact value, a SUM
// over its shards, at the same read time, which it returns: a counter
// deleted by then is NOT_FOUND, whatever this instance remembers of it.
func (s *Store) Strong(ctx context.Context, id string) (counter.Counter, int64, time.Time, error) {
	c, at, err := s.storedAt(ctx, id)
	if kind, ok := s.opts.Kinds.Of(id); ok && errs.Is(err, errs.NotFound) {
		return kind.Counter(id), 0, at, nil // not used yet: 0
	}
	if err == nil && c.IsDeleted() {
		err = notFound(id)
	}
	if err != nil {
		return counter.Counter{}, 0, time.Time{}, err
	}
	if c.Distinct {
		total, at, err := s.Estimate(ctx, c, at)
		return c, total, at, err
	}
	total, at, err := s.Sum(ctx, id, at)
	if err == nil && c.Choices != nil {
		c.Counts, err = s.SumCounts(ctx, c, at)
	}
	if err != nil {
		return counter.Counter{}, 0, time.Time{}, err
	}
	return c, total, at, nil
}

// Remember caches c, valid from readStart (when the read that saw it, or
// the commit that wrote it, began: the cache never outlives the bound
// reshards and deletions count on).
func (s *Store) Remember(c counter.Counter, readStart time.Time) {
	s.cached.Add(c.ID, cachedCounter{c: c, expires: readStart.Add(s.opts.ShardCountCache)})
}

// Sum returns the exact value of a counter at read time at (zero: now), a
// SUM over its shards (one billed read per 1,000 shards), with the
// snapshot's read time. A sum past int64 (shards written outside the
// functions) is DATA_LOSS.
//
// It aggregates count alone: a query with several aggregations counts only
// the documents that hold every field aggregated, so a shard without one of
// them (written before it existed) would drop out of the total.
func (s *Store) Sum(ctx context.Context, id string, at time.Time) (int64, time.Time, error) {
	v, at, err := s.db.Sum(ctx, dm.UnderCounter(id, dm.Shards), at, dm.FieldCount)
	if err != nil {
		return 0, time.Time{}, fs.Classify(err, "sum the shards of "+id)
	}
	return v[0], at, nil
}

// SumCounts returns a choice counter's exact count of each choice at read
// time at: a SUM over its shards for each (one aggregation each, alone
// for the reason Sum gives: a shard holds only the choices chosen on it).
func (s *Store) SumCounts(ctx context.Context, c counter.Counter, at time.Time) (map[string]int64, error) {
	counts := map[string]int64{}
	for _, choice := range c.Choices {
		v, _, err := s.db.Sum(ctx, dm.UnderCounter(c.ID, dm.Shards), at, dm.FieldCountOf(choice))
		if err != nil {
			return nil, fs.Classify(err, "sum the shards of "+c.ID)
		}
		counts[choice] = v[0]
	}
	return counts, nil
}

// Change is one change of a counter document, built from the document as
// read at read time at: the writes of its commit (the first one the
// document's, with a precondition on its version), or an error to stop
// with.
type Change func(c counter.Counter, at time.Time) ([]*pb.Write, error)

// Update is the one "read, commit against the version read, read again if
// it changed" of a counter document (retry.Raced): it reads it
// (tombstones too with withTombstone), builds the commit with change, and
// commits it. It returns the document as read and the commit's answer
// (nil when change wrote nothing).
func (s *Store) Update(ctx context.Context, id string, withTombstone bool, what string, change Change) (counter.Counter, *pb.CommitResponse, error) {
	var c counter.Counter
	var resp *pb.CommitResponse
	err := retry.Raced(fmt.Sprintf("counter %q", id), func(int) (bool, error) {
		var at time.Time
		var err error
		c, at, err = s.storedAt(ctx, id)
		if err == nil && c.IsDeleted() && !withTombstone {
			err = notFound(id)
		}
		if err != nil {
			return false, err
		}
		writes, err := change(c, at)
		if err != nil || len(writes) == 0 {
			return false, err
		}
		resp, err = s.db.Commit(ctx, writes...)
		switch fs.Code(err) {
		case codes.OK:
			return false, nil
		case codes.FailedPrecondition:
			return true, nil // written in between: read again
		case codes.NotFound:
			return false, notFound(id)
		}
		return false, fs.Classify(err, what+" "+id)
	})
	if err != nil {
		return counter.Counter{}, nil, err
	}
	return c, resp, nil
}

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
func (s *Store) ShardWrite(id string, k int, c ShardChange) *pb.Write {
	deltas := map[string]int64{dm.FieldCount: c.Count, dm.FieldCommits: c.Commits, dm.FieldSlow: c.Slow}
	for choice, n := range c.Counts {
		deltas[dm.FieldCountOf(choice)] = n
	}
	return fs.IncrementWrite(s.name(dm.Shard(id, k)), deltas)
}

// SketchWrite is the write of a distinct counter's shard k: its sketch's
// bytes, on the condition of the version the sketch was read at (zero:
// that the shard does not exist), and c's commits and slow.
func (s *Store) SketchWrite(id string, k int, sketch []byte, version time.Time, c ShardChange) *pb.Write {
	name, fields := s.name(dm.Shard(id, k)), map[string]*pb.Value{dm.FieldSketch: fs.BytesValue(sketch)}
	w := fs.CreateWrite(name, fields)
	if !version.IsZero() {
		w = fs.UpdateWrite(name, fields, []string{dm.FieldSketch}, version)
	}
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.Increment(dm.FieldCommits, c.Commits), fs.Increment(dm.FieldSlow, c.Slow)}
	return w
}

// Estimate is distinct counter c's estimate at read time at (zero: now):
// its shards' sketches merged (one read a shard), with the read time.
func (s *Store) Estimate(ctx context.Context, c counter.Counter, at time.Time) (int64, time.Time, error) {
	names := make([]string, c.NumShards)
	for k := range names {
		names[k] = s.name(dm.Shard(c.ID, k))
	}
	docs, at, err := s.db.GetAll(ctx, names, at)
	if err != nil {
		return 0, time.Time{}, fs.Classify(err, "read the sketches of "+c.ID)
	}
	whole := distinct.New()
	for _, pd := range docs {
		if pd == nil {
			continue
		}
		sk, err := SketchOf(pd)
		if err == nil {
			err = whole.Merge(sk)
		}
		if err != nil {
			return 0, time.Time{}, err
		}
	}
	return whole.Estimate(), at, nil
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

// ActivityWrite marks counter id in the activity index (internal/activity)
// at at, or at its commit's time when at is zero, on a random shard value.
func (s *Store) ActivityWrite(id string, at time.Time) *pb.Write {
	fields := map[string]*pb.Value{dm.FieldActivityShard: fs.StringValue(strconv.Itoa(s.IntN(id, s.ActivityShards())))}
	if !at.IsZero() {
		fields[dm.FieldActivityAt] = fs.TimeValue(at)
	}
	w := fs.SetFieldsWrite(s.name(dm.Marker(id)), fields)
	if at.IsZero() {
		w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldActivityAt)}
	}
	return w
}

// ActivityShards is how many shard values markers are spread over.
func (s *Store) ActivityShards() int { return max(1, s.opts.ActivityShards) }

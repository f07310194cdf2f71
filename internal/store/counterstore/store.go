// Package counterstore keeps the counter documents and their life in
// Firestore: reading them (through this instance's cache) and summing
// their shards, creating (and the write a first use adds to its commit),
// resharding, setting the ranking flag, deleting and purging them, and
// listing counters.
//
// A counter document read is cached for SHARD_COUNT_CACHE, from when the
// read began: reshards and deletions count on no instance using one
// longer (docs/design/lifecycle.md).
package counterstore

import (
	"context"
	"fmt"
	"sync"
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
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// Options configure a Store.
type Options struct {
	// ShardCountCache is how long a counter's document (its shard count,
	// owner and kind) is used before it is read again (SHARD_COUNT_CACHE).
	ShardCountCache time.Duration
	// Kinds are the app's kinds: an absent counter of one reads as the
	// counter its first increment creates, and a join-only kind's counters
	// are of mode JoinOnly.
	Kinds counter.Kinds
	// Calendar says where the buckets a ranking flag is set on begin.
	Calendar windows.Calendar
}

// Store is the counter documents of one database, and what this instance
// remembers of them.
type Store struct {
	db     *fs.DB
	base   *shared.Base
	opts   Options
	cached *sizedlru.Cache[string, cachedCounter]

	keepMu  sync.Mutex // an entry read and replaced at once (keep)
	loadMu  sync.Mutex
	loading map[string]chan struct{} // counters a read of Fresh is under way for, closed when it ends
}

// cachedCounter is a counter as a read (or the commit that wrote it) saw
// it, from read on; absent: a counter of a kind nobody used yet, read
// absent (Fresh's only: an increment reads such a counter again).
type cachedCounter struct {
	c       counter.Counter
	read    time.Time
	expires time.Time
	absent  bool
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
	size := sizedlru.Entry + sizedlru.String(id) + int(unsafe.Sizeof(e)) + len(c.ID) + len(c.Owner) + len(c.Kind) +
		len(c.Reshard.Reason) + len(c.Peaks)*int(unsafe.Sizeof(windows.Peak{})+32)
	for _, choice := range c.Choices { // a choice counter's, and its count
		size += sizedlru.String(choice) + 2*sizedlru.String("") + 8
	}
	return size
}

// New returns the store on base.
func New(base *shared.Base, opts Options) *Store {
	cached := sizedlru.New(maxCached, sizedlru.Share(cacheShare), cachedSize)
	return &Store{db: base.DB, base: base, opts: opts, cached: cached, loading: map[string]chan struct{}{}}
}

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
	start := s.base.Now()
	docs, at, err := s.db.GetAll(ctx, []string{s.name(dm.Counter(id))}, time.Time{})
	if err != nil {
		return counter.Counter{}, time.Time{}, fs.Classify(err, "read counter "+id)
	}
	if docs[0] == nil {
		s.cached.Remove(id)
		return counter.Counter{}, at, notFound(id)
	}
	c, err := s.decode(docs[0])
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
	if e, ok := s.cached.Get(id); ok && !e.absent && s.base.Now().Before(e.expires) {
		c, _, err := s.liveOrNew(ctx, id, func(context.Context, string) (counter.Counter, error) { return e.c, nil })
		return c, e.expires, err
	}
	start := s.base.Now()
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

// Strong returns a live counter's document and its exact value (Sums: a
// SUM over its shards, a distinct counter's estimate), at the same read
// time, which it returns: a counter
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
	sums, at, err := s.Sums(ctx, c, at)
	if err != nil {
		return counter.Counter{}, 0, time.Time{}, err
	}
	c.Counts = sums.Counts
	return c, sums.Count, at, nil
}

// Sums are counter c's value at read time at (zero: now), with the
// snapshot's read time: a SUM over its shards, and of a choice counter
// each choice's; of a distinct counter, the estimate of its shards'
// sketches merged, and their latest write.
func (s *Store) Sums(ctx context.Context, c counter.Counter, at time.Time) (counter.Sums, time.Time, error) {
	var sums counter.Sums
	var err error
	switch c.Mode {
	case counter.Distinct:
		sums.Count, sums.Written, at, err = s.estimate(ctx, c, at)
	case counter.Choice:
		if sums.Count, at, err = s.Sum(ctx, c.ID, at); err == nil {
			sums.Counts, err = s.sumCounts(ctx, c, at)
		}
	default:
		sums.Count, at, err = s.Sum(ctx, c.ID, at)
	}
	return sums, at, err
}

// Remember caches c, valid from readStart (when the read that saw it, or
// the commit that wrote it, began: the cache never outlives the bound
// reshards and deletions count on).
func (s *Store) Remember(c counter.Counter, readStart time.Time) {
	s.keep(c.ID, cachedCounter{c: c, read: readStart, expires: readStart.Add(s.opts.ShardCountCache)})
}

// keep caches e as id's entry, unless the entry there is newer: a read
// answered after a commit of this instance, or after a newer read, must
// not put back what they replaced (a live counter over the tombstone of
// the deletion this instance made, answered 404 at once).
func (s *Store) keep(id string, e cachedCounter) {
	s.keepMu.Lock()
	defer s.keepMu.Unlock()
	if old, ok := s.cached.Get(id); ok && old.newerThan(e) {
		return
	}
	s.cached.Add(id, e)
}

// newerThan reports whether e saw a later state than o: a later version of
// the document, or, when either was read absent (no version), a read
// begun later.
func (e cachedCounter) newerThan(o cachedCounter) bool {
	if e.absent || o.absent {
		return e.read.After(o.read)
	}
	return e.c.Version.After(o.c.Version)
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

// sumCounts returns a choice counter's exact count of each choice at read
// time at: a SUM over its shards for each (one aggregation each, alone
// for the reason Sum gives: a shard holds only the choices chosen on it).
func (s *Store) sumCounts(ctx context.Context, c counter.Counter, at time.Time) (map[string]int64, error) {
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
type Change = func(c counter.Counter, at time.Time) ([]*pb.Write, error)

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

// estimate is distinct counter c's estimate at read time at (zero: now):
// its shards' sketches merged (one read a shard), with their latest write
// and the read time.
func (s *Store) estimate(ctx context.Context, c counter.Counter, at time.Time) (n int64, written, readTime time.Time, err error) {
	names := make([]string, c.NumShards)
	for k := range names {
		names[k] = s.name(dm.Shard(c.ID, k))
	}
	docs, at, err := s.db.GetAll(ctx, names, at)
	if err != nil {
		return 0, time.Time{}, time.Time{}, fs.Classify(err, "read the sketches of "+c.ID)
	}
	whole := distinct.New()
	for _, pd := range docs {
		if pd == nil {
			continue
		}
		sk, err := shared.SketchOf(pd)
		if err == nil {
			err = whole.Merge(sk)
		}
		if err != nil {
			return 0, time.Time{}, time.Time{}, err
		}
		if u := pd.GetUpdateTime().AsTime(); u.After(written) {
			written = u
		}
	}
	return whole.Estimate(), written, at, nil
}

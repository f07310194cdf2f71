package firestoredb

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// Collection and field names of the counters data model
// (docs/reference/data-model.md); security rules and the roll-up trigger
// depend on them.
const (
	CountersCollection = "counters"
	ShardsCollection   = "shards"
	KeysCollection     = "idempotency_keys"
	SlotsCollection    = "rollup_slots"
	MembersCollection  = "members"
	WindowsCollection  = "windows"
	// StateCollection holds the project's own bookkeeping (the reconcile
	// cursor); no rule lets clients read it.
	StateCollection = "shardcount"

	fieldNumShards      = "num_shards"
	fieldCount          = "count"
	fieldAsOf           = "rollup_as_of"
	fieldCreatedAt      = "created_at"
	fieldRollups        = "rollups"
	fieldGuardCheckedAt = "checked_at" // of the bound's guard, moved by each commit near it
	fieldShardCommits   = "shard_commits"
	fieldSlowCommits    = "slow_commits"
	fieldWriteRate      = "write_rate"
	fieldActivityAsOf   = "activity_as_of"
	fieldReshard        = "reshard"
	fieldOwner          = "owner"
	fieldUnique         = "unique"
	fieldOrigin         = "origin"
	fieldRanked         = "ranked"
	fieldKind           = "kind"
	fieldDeleted        = "deleted"
	fieldDeletedAt      = "deleted_at"
	fieldPurgeAfter     = "purge_after"
	fieldPurged         = "purged"
	fieldResetAt        = "reset_at"
	fieldCommits        = "commits" // of a shard
	fieldSlow           = "slow"    // of a shard
	fieldDelta          = "delta"
	fieldShard          = "shard"
	fieldMember         = "member"
	fieldChanged        = "changed"
	fieldJoinedAt       = "joined_at"
	fieldUID            = "uid"
	fieldExpireAt       = "expire_at"
	fieldHolder         = "holder"
)

// ShardDocument is the path pattern of shard documents, which the roll-up
// trigger watches.
const ShardDocument = CountersCollection + "/{counterId}/" + ShardsCollection + "/{shardId}"

// maxCached bounds the counters (and contention flags) one instance
// remembers; the least recently used are forgotten first.
const maxCached = 100_000

// Options configure a Store.
type Options struct {
	// ShardCountCache is how long a counter's document (its shard count,
	// owner and kind) is used before it is read again (SHARD_COUNT_CACHE).
	ShardCountCache time.Duration
	// SlowCommit marks a commit as contended (AUTO_SHARDING_SLOW_COMMIT).
	SlowCommit time.Duration
	// Windows keeps the roll-up's changes in minute, hour and day buckets
	// for so long; nil turns them off (WINDOWS=off).
	Windows windows.Retention
	// ActivityEvery is how often an instance marks a counter it writes in
	// the activity index (config.ActivityEvery), on ActivityShards shard values
	// (ACTIVITY_SHARDS).
	ActivityEvery  time.Duration
	ActivityShards int
	// Kinds are the app's kinds: an absent counter of one is created by
	// its first increment (Increments.Apply).
	Kinds counter.Kinds
	// Now is the store's clock and IntN its random choice of a shard (of
	// the counter or marker key); nil: time.Now and math/rand (the
	// simulation's are virtual, and seeded per key, so concurrent choices
	// do not depend on their order).
	Now  func() time.Time
	IntN func(key string, n int) int
}

// Store is shardcount's data in Firestore, by concept:
//
//	counters/{id}                          num_shards, count, rollup_as_of, created_at, owner, unique, origin, ranked,
//	                                       rollups, shard_commits, slow_commits, write_rate, activity_as_of,
//	                                       reshard, reset_at, deleted, deleted_at, purge_after, purged, kind
//	counters/{id}/shards/{0..N-1}          count, commits, slow (created by the first increment landing on it)
//	counters/{id}/idempotency_keys/{hash}  delta, shard, member, changed, expire_at (TTL)
//	counters/{id}/rollup_slots/{due}       holder, expire_at (TTL): a roll-up claimed for due
//	counters/{id}/members/{uid}            uid, counter_id, joined_at: unique counters
//	counters/{id}/windows/{g}_{start}      the roll-up's change per minute, hour and day
//
// The concepts share one instance's memory of each counter (base).
type Store struct {
	// Counters are the counter documents and their lifecycle: creation,
	// reads, listing, ranking, resetting, resharding, deletion.
	Counters *Counters
	// Increments apply increments and likes to the shards.
	Increments *Increments
	// Rollups are what the roll-up and reconcile read and write.
	Rollups *Rollups
	// Windows are the buckets read back: history and rankings.
	Windows *Windows
}

// NewStore returns the store on db.
func NewStore(db *DB, opts Options) *Store {
	b := newBase(db, opts)
	return &Store{Counters: &Counters{b}, Increments: &Increments{b}, Rollups: &Rollups{b}, Windows: &Windows{b}}
}

// base is what the concepts share: the database and what one instance
// remembers of counters.
type base struct {
	db   *DB
	opts Options
	now  func() time.Time
	intn func(key string, n int) int

	cached    *lru.Cache[string, cachedCounter]
	known     *lru.Cache[string, knownValue] // see Increments.Apply
	contended *lru.Cache[string, bool]       // the last commit of the counter was slow or refused
	marked    *lru.Cache[string, time.Time]  // when this instance last marked a counter active
}

type cachedCounter struct {
	c       counter.Counter
	expires time.Time
}

func newBase(db *DB, opts Options) *base {
	cached, _ := lru.New[string, cachedCounter](maxCached) // size > 0 never fails
	known, _ := lru.New[string, knownValue](maxCached)
	contended, _ := lru.New[string, bool](maxCached)
	marked, _ := lru.New[string, time.Time](maxCached)
	now, intn := opts.Now, opts.IntN
	if now == nil {
		now = time.Now
	}
	if intn == nil {
		intn = func(_ string, n int) int { return rand.IntN(n) }
	}
	return &base{db: db, opts: opts, now: now, intn: intn, cached: cached, known: known, contended: contended, marked: marked}
}

// Paths of a counter's documents and collections, relative to the
// database's documents.
func counterPath(id string) string              { return CountersCollection + "/" + id }
func underCounter(id, collection string) string { return counterPath(id) + "/" + collection }
func shardPath(id string, k int) string {
	return underCounter(id, ShardsCollection) + "/" + strconv.Itoa(k)
}

func (b *base) counterName(id string) string      { return b.db.name(counterPath(id)) }
func (b *base) shardName(id string, k int) string { return b.db.name(shardPath(id, k)) }

func notFound(id string) error { return errs.New(errs.NotFound, "counter %q does not exist", id) }

// stored reads the counter document, a deleted counter's tombstone
// included (IsDeleted), and caches it.
func (b *base) stored(ctx context.Context, id string) (counter.Counter, error) {
	c, _, err := b.storedAt(ctx, id)
	return c, err
}

// storedAt is stored, with the read's time: what a SUM at the same time
// sees of the shards is consistent with the document.
func (b *base) storedAt(ctx context.Context, id string) (counter.Counter, time.Time, error) {
	start := b.now()
	docs, at, err := b.db.getAt(ctx, []string{b.counterName(id)}, time.Time{})
	if err != nil {
		return counter.Counter{}, time.Time{}, classify(err, "read counter "+id)
	}
	if docs[0] == nil {
		b.cached.Remove(id)
		return counter.Counter{}, at, notFound(id)
	}
	c, err := decodeCounter(docs[0])
	if err != nil {
		return counter.Counter{}, at, err
	}
	b.remember(c, start)
	return c, at, nil
}

// live reads the counter document; NOT_FOUND if the counter does not
// exist or is deleted.
func (b *base) live(ctx context.Context, id string) (counter.Counter, error) {
	c, err := b.stored(ctx, id)
	if err == nil && c.IsDeleted() {
		return counter.Counter{}, notFound(id)
	}
	return c, err
}

// storedCached is stored, from this instance's cache when it has the
// document (a tombstone too).
func (b *base) storedCached(ctx context.Context, id string) (counter.Counter, error) {
	if c, ok := b.cached.Get(id); ok && b.now().Before(c.expires) {
		return c.c, nil
	}
	return b.stored(ctx, id)
}

// liveOrNew is live (liveCached with cached), but for an absent counter
// of a declared kind: the counter its first increment creates (a zero
// Version says it does not exist yet). A deleted one stays NOT_FOUND.
func (b *base) liveOrNew(ctx context.Context, id string, cached bool) (counter.Counter, error) {
	read := b.stored
	if cached {
		read = b.storedCached
	}
	c, err := read(ctx, id)
	if kind, ok := b.opts.Kinds.Of(id); ok && errs.Is(err, errs.NotFound) {
		return kind.Counter(id), nil
	}
	if err == nil && c.IsDeleted() {
		return counter.Counter{}, notFound(id)
	}
	return c, err
}

// liveCached returns a live counter's document from this instance's cache
// (SHARD_COUNT_CACHE), reading it when the cache has none: reading it on
// every increment would cost a read each and load the very document the
// shards protect. A resharded count reaches every instance within the
// cache's lifetime, which is why shrinking keeps merging, and a deleted id
// stays reserved, for that long. Its Count is the roll-up as of the read,
// possibly stale.
func (b *base) liveCached(ctx context.Context, id string) (counter.Counter, error) {
	c, err := b.storedCached(ctx, id)
	if err == nil && c.IsDeleted() {
		return counter.Counter{}, notFound(id)
	}
	return c, err
}

// remember caches c, valid from readStart (when the read that saw it
// began, so the cache never outlives the bound reshards and deletions
// count on).
func (b *base) remember(c counter.Counter, readStart time.Time) {
	b.cached.Add(c.ID, cachedCounter{c: c, expires: readStart.Add(b.opts.ShardCountCache)})
}

// forget drops what this instance remembers of counter id.
func (b *base) forget(id string) {
	b.cached.Remove(id)
	b.known.Remove(id)
	b.contended.Remove(id)
}

// change is one change of a counter document, built from the document as
// read at read time at: the writes of its commit (the first one the
// document's, with a precondition on its version), or an error to stop
// with.
type change func(c counter.Counter, at time.Time) ([]*pb.Write, error)

// maxVersionAttempts bounds how often a change is read and committed
// again after the document changed in between (a roll-up wrote it).
const maxVersionAttempts = 5

// update is the one "read, commit against the version read, read again if
// it changed" loop of a counter document: it reads it (tombstones too
// with withTombstone), builds the commit with change, and commits it. It
// returns the document as read and the commit's answer (nil when change
// wrote nothing).
func (b *base) update(ctx context.Context, id string, withTombstone bool, what string, ch change) (counter.Counter, *pb.CommitResponse, error) {
	for range maxVersionAttempts {
		c, at, err := b.storedAt(ctx, id)
		if err == nil && c.IsDeleted() && !withTombstone {
			err = notFound(id)
		}
		if err != nil {
			return counter.Counter{}, nil, err
		}
		writes, err := ch(c, at)
		if err != nil || len(writes) == 0 {
			return c, nil, err
		}
		resp, err := b.db.commit(ctx, writes...)
		switch code(err) {
		case codes.OK:
			return c, resp, nil
		case codes.FailedPrecondition:
			continue // written in between: read again
		case codes.NotFound:
			return counter.Counter{}, nil, notFound(id)
		}
		return counter.Counter{}, nil, classify(err, what+" "+id)
	}
	return counter.Counter{}, nil, errs.Retryable(nil, retryAfter, "counter %q keeps changing; retry", id)
}

// landsBy is the latest a commit sent now under ctx may land: its
// deadline (Firestore applies nothing past a call's deadline), or now
// when it has none.
func landsBy(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.After(now) {
		return d
	}
	return now
}

// versionOf returns the update time a write of a commit left.
func versionOf(resp *pb.CommitResponse, write int) time.Time {
	return resp.GetWriteResults()[write].GetUpdateTime().AsTime()
}

// shardChange is what one commit adds to a shard: its count, and the
// commit counters automatic sharding reads (Rollups.Activity).
type shardChange struct {
	Count, Commits, Slow int64
}

// shardWrite is the one write of a shard: every field always, so a sum of
// several of them counts every shard (see Rollups.Activity).
func (b *base) shardWrite(id string, k int, c shardChange) *pb.Write {
	return incrementWrite(b.shardName(id, k), map[string]int64{fieldCount: c.Count, fieldCommits: c.Commits, fieldSlow: c.Slow})
}

// sum returns the exact value of a counter at read time at (zero: now), a
// SUM over its shards (one billed read per 1,000 shards), with the
// snapshot's read time. A sum past int64 (shards written outside the
// functions) is DATA_LOSS.
//
// It aggregates count alone: a query with several aggregations counts only
// the documents that hold every field aggregated, so a shard without one of
// them (written before it existed) would drop out of the total.
func (b *base) sum(ctx context.Context, id string, at time.Time) (int64, time.Time, error) {
	v, at, err := b.db.sum(ctx, underCounter(id, ShardsCollection), at, fieldCount)
	if err != nil {
		return 0, time.Time{}, classify(err, "sum the shards of "+id)
	}
	return v[0], at, nil
}

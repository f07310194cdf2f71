package firestoredb

import (
	"context"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// Collection and field names of the counters data model (README "Data
// model"); security rules and the roll-up trigger depend on them.
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

	fieldNumShards    = "num_shards"
	fieldCount        = "count"
	fieldAsOf         = "rollup_as_of"
	fieldCreatedAt    = "created_at"
	fieldRollups      = "rollups"
	fieldShardCommits = "shard_commits"
	fieldSlowCommits  = "slow_commits"
	fieldWriteRate    = "write_rate"
	fieldActivityAsOf = "activity_as_of"
	fieldReshard      = "reshard"
	fieldOwner        = "owner"
	fieldUnique       = "unique"
	fieldOrigin       = "origin"
	fieldRanked       = "ranked"
	fieldDeletedAt    = "deleted_at"
	fieldPurgeAfter   = "purge_after"
	fieldCommits      = "commits" // of a shard
	fieldSlow         = "slow"    // of a shard
	fieldDelta        = "delta"
	fieldShard        = "shard"
	fieldMember       = "member"
	fieldChanged      = "changed"
	fieldJoinedAt     = "joined_at"
	fieldExpireAt     = "expire_at"
	fieldHolder       = "holder"
)

// ShardDocument is the path pattern of shard documents, which the roll-up
// trigger watches.
const ShardDocument = CountersCollection + "/{counterId}/" + ShardsCollection + "/{shardId}"

// maxCached bounds the counters (and contention flags) one instance
// remembers; the least recently used are forgotten first.
const maxCached = 100_000

// CountersOptions configure a Counters store.
type CountersOptions struct {
	// ShardCountCache is how long a counter's document (its shard count,
	// owner and kind) is used before it is read again (SHARD_COUNT_CACHE).
	ShardCountCache time.Duration
	// SlowCommit marks a commit as contended (AUTO_SHARDING_SLOW_COMMIT).
	SlowCommit time.Duration
	// Windows keeps the roll-up's changes in minute, hour and day buckets
	// for so long; nil turns them off (WINDOWS=off).
	Windows windows.Retention
}

// Counters stores sharded counters:
//
//	counters/{id}                          num_shards, count, rollup_as_of, created_at, owner, unique, origin, ranked,
//	                                       rollups, shard_commits, slow_commits, write_rate, activity_as_of,
//	                                       reshard, deleted_at, purge_after
//	counters/{id}/shards/{0..N-1}          count, commits, slow (created by the first increment landing on it)
//	counters/{id}/idempotency_keys/{hash}  delta, shard, member, changed, expire_at (TTL)
//	counters/{id}/rollup_slots/{due}       holder, expire_at (TTL): a roll-up claimed for due
//	counters/{id}/members/{uid}            joined_at: unique counters
//	counters/{id}/windows/{g}_{start}      the roll-up's change per minute, hour and day
type Counters struct {
	db   *DB
	opts CountersOptions
	now  func() time.Time

	cached    *lru.Cache[string, cachedCounter]
	known     *lru.Cache[string, knownValue] // see Apply
	contended *lru.Cache[string, bool]       // the last commit of the counter was slow or refused
}

type cachedCounter struct {
	c       counter.Counter
	expires time.Time
}

// NewCounters returns the counter store on db.
func NewCounters(db *DB, opts CountersOptions) *Counters {
	cached, _ := lru.New[string, cachedCounter](maxCached) // size > 0 never fails
	known, _ := lru.New[string, knownValue](maxCached)
	contended, _ := lru.New[string, bool](maxCached)
	return &Counters{db: db, opts: opts, now: time.Now, cached: cached, known: known, contended: contended}
}

func (s *Counters) ref(id string) *firestore.DocumentRef {
	return s.db.client.Collection(CountersCollection).Doc(id)
}

func (s *Counters) shardRef(id string, k int) *firestore.DocumentRef {
	return s.ref(id).Collection(ShardsCollection).Doc(strconv.Itoa(k))
}

func notFound(id string) error { return errs.New(errs.NotFound, "counter %q does not exist", id) }

// Create creates counter c.ID with c.NumShards shards, c.Owner and
// c.Unique. It writes one document whatever the shard count: shards
// appear when the first increment lands on them. The id of a deleted
// counter is free again once its late writes can no longer land
// (freeTombstone); documents left under an id whose counter document was
// deleted by hand are purged first, so a new counter never counts an old
// one's shards.
func (s *Counters) Create(ctx context.Context, c counter.Counter) (counter.Counter, error) {
	fields := map[string]*pb.Value{
		fieldNumShards: intValue(int64(c.NumShards)),
		fieldCount:     intValue(0),
		fieldRollups:   intValue(0),
		fieldOwner:     stringValue(c.Owner),
		fieldUnique:    boolValue(c.Unique),
		fieldOrigin:    stringValue(string(c.Origin)),
		fieldRanked:    boolValue(c.Ranked),
	}
	w := createWrite(s.ref(c.ID).Path, fields)
	old, err := s.Document(ctx, c.ID)
	switch {
	case err == nil && !old.IsDeleted():
		return counter.Counter{}, errs.New(errs.AlreadyExists, "counter %q already exists", c.ID)
	case err == nil:
		if err := s.freeTombstone(ctx, old); err != nil {
			return counter.Counter{}, err
		}
		w = replaceWrite(s.ref(c.ID).Path, fields, old.Version)
	case errs.Is(err, errs.NotFound):
		if done, err := s.purge(ctx, counter.Counter{ID: c.ID}, false); err != nil || !done {
			return counter.Counter{}, errs.Retryable(err, retryAfter, "counter_id %q: documents of an earlier counter are still being removed; retry", c.ID)
		}
	default:
		return counter.Counter{}, err
	}
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldAsOf), serverTime(fieldCreatedAt)}
	resp, err := s.db.commit(ctx, w)
	switch code(err) {
	case codes.OK:
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
		return counter.Counter{}, errs.New(errs.AlreadyExists, "counter %q already exists", c.ID) // created meanwhile
	default:
		return counter.Counter{}, classify(err, "create counter "+c.ID)
	}
	at := resp.GetCommitTime().AsTime()
	c.Count, c.AsOf, c.Version, c.CreatedAt = 0, at, at, at
	s.remember(c, s.now())
	return c, nil
}

func serverTime(field string) *pb.DocumentTransform_FieldTransform {
	return &pb.DocumentTransform_FieldTransform{FieldPath: field,
		TransformType: &pb.DocumentTransform_FieldTransform_SetToServerValue{SetToServerValue: pb.DocumentTransform_FieldTransform_REQUEST_TIME}}
}

// Read reads the counter document; NOT_FOUND if the counter does not exist
// or is deleted.
func (s *Counters) Read(ctx context.Context, id string) (counter.Counter, error) {
	c, err := s.Document(ctx, id)
	if err == nil && c.IsDeleted() {
		return counter.Counter{}, notFound(id)
	}
	return c, err
}

// Document reads the counter document, a deleted counter's tombstone
// included (IsDeleted), and caches it.
func (s *Counters) Document(ctx context.Context, id string) (counter.Counter, error) {
	start := s.now()
	snap, err := s.db.get(ctx, s.ref(id))
	if code(err) == codes.NotFound {
		s.cached.Remove(id)
		return counter.Counter{}, notFound(id)
	}
	if err != nil {
		return counter.Counter{}, classify(err, "read counter "+id)
	}
	c, err := decodeCounter(snap)
	if err != nil {
		return counter.Counter{}, err
	}
	s.remember(c, start)
	return c, nil
}

// counterDoc is the stored form of a counter document.
type counterDoc struct {
	NumShards    int        `firestore:"num_shards"`
	Count        int64      `firestore:"count"`
	AsOf         time.Time  `firestore:"rollup_as_of"`
	CreatedAt    time.Time  `firestore:"created_at"`
	Owner        string     `firestore:"owner"`
	Unique       bool       `firestore:"unique"`
	Origin       string     `firestore:"origin"`
	Ranked       bool       `firestore:"ranked"`
	ShardCommits int64      `firestore:"shard_commits"`
	SlowCommits  int64      `firestore:"slow_commits"`
	WriteRate    float64    `firestore:"write_rate"`
	ActivityAsOf time.Time  `firestore:"activity_as_of"`
	Reshard      reshardDoc `firestore:"reshard"`
	DeletedAt    time.Time  `firestore:"deleted_at"`
	PurgeAfter   time.Time  `firestore:"purge_after"`
}

type reshardDoc struct {
	From       int       `firestore:"from"`
	To         int       `firestore:"to"`
	At         time.Time `firestore:"at"`
	MergeUntil time.Time `firestore:"merge_until"`
	MergedAt   time.Time `firestore:"merged_at"`
	Reason     string    `firestore:"reason"`
}

// decodeCounter reads a counter document, refusing one the functions
// cannot have written (DATA_LOSS): everything downstream trusts it.
func decodeCounter(snap *firestore.DocumentSnapshot) (counter.Counter, error) {
	var d counterDoc
	if err := snap.DataTo(&d); err != nil {
		return counter.Counter{}, errs.Wrap(errs.DataLoss, err, "counter %q has a malformed document", snap.Ref.ID)
	}
	if d.NumShards < counter.MinShards || d.NumShards > counter.MaxShards {
		return counter.Counter{}, errs.New(errs.DataLoss, "counter %q has num_shards %d, not %d to %d: its document was written outside the functions",
			snap.Ref.ID, d.NumShards, counter.MinShards, counter.MaxShards)
	}
	return counter.Counter{
		ID: snap.Ref.ID, NumShards: d.NumShards, Count: d.Count, AsOf: d.AsOf, Version: snap.UpdateTime,
		Sums:      counter.Sums{Count: d.Count, Commits: d.ShardCommits, Slow: d.SlowCommits},
		WriteRate: d.WriteRate, ActivityAsOf: d.ActivityAsOf,
		Reshard: counter.Reshard(d.Reshard),
		Owner:   d.Owner, Unique: d.Unique, CreatedAt: d.CreatedAt, Origin: counter.Origin(d.Origin), Ranked: d.Ranked,
		Deleted: counter.Deletion{At: d.DeletedAt, PurgeAfter: d.PurgeAfter},
	}, nil
}

func reshardValue(r counter.Reshard) *pb.Value {
	fields := map[string]*pb.Value{
		"from": intValue(int64(r.From)), "to": intValue(int64(r.To)),
		"at": timeValue(r.At), "reason": stringValue(r.Reason),
	}
	if !r.MergeUntil.IsZero() {
		fields["merge_until"] = timeValue(r.MergeUntil)
	}
	if !r.MergedAt.IsZero() {
		fields["merged_at"] = timeValue(r.MergedAt)
	}
	return mapValue(fields)
}

// Info returns a counter's document (its shard count, owner and kind) from
// a per-instance cache (SHARD_COUNT_CACHE): reading it on every increment
// would cost a read each and load the very document the shards protect. A
// resharded count reaches every instance within the cache's lifetime,
// which is why shrinking keeps merging, and a deleted id stays reserved,
// for that long. Its Count is the roll-up as of the read, possibly stale.
func (s *Counters) Info(ctx context.Context, id string) (counter.Counter, error) {
	if c, ok := s.cached.Get(id); ok && s.now().Before(c.expires) {
		if c.c.IsDeleted() {
			return counter.Counter{}, notFound(id)
		}
		return c.c, nil
	}
	return s.Read(ctx, id)
}

// remember caches c, valid from readStart (when the read that saw it
// began, so the cache never outlives the bound reshards and deletions
// count on).
func (s *Counters) remember(c counter.Counter, readStart time.Time) {
	s.cached.Add(c.ID, cachedCounter{c: c, expires: readStart.Add(s.opts.ShardCountCache)})
}

// Sum returns the exact value of a counter now, a SUM over its shards (one
// billed read per 1,000 shards), with the snapshot's read time. A sum
// past int64 (shards written outside the functions) is DATA_LOSS.
//
// It aggregates count alone: a query with several aggregations counts only
// the documents that hold every field aggregated, so a shard without one of
// them (written before it existed) would drop out of the total.
func (s *Counters) Sum(ctx context.Context, id string) (int64, time.Time, error) {
	v, at, err := s.db.sum(ctx, s.ref(id).Collection(ShardsCollection), fieldCount)
	if err != nil {
		return 0, time.Time{}, classify(err, "sum the shards of "+id)
	}
	return v[0], at, nil
}

// Activity returns the commits made to a counter's shards, and how many of
// them followed a slow or refused commit: evidence for automatic sharding.
// Every increment writes both fields, so the shards it counts are the
// shards written since it existed.
func (s *Counters) Activity(ctx context.Context, id string) (commits, slow int64, err error) {
	v, _, err := s.db.sum(ctx, s.ref(id).Collection(ShardsCollection), fieldCommits, fieldSlow)
	if err != nil {
		return 0, 0, classify(err, "sum the shard activity of "+id)
	}
	return v[0], v[1], nil
}

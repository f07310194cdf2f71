package firestoredb

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// Collection and field names of the counters data model (README "Data
// model"); security rules and the roll-up trigger depend on them.
const (
	CountersCollection = "counters"
	ShardsCollection   = "shards"
	KeysCollection     = "idempotency_keys"
	SlotsCollection    = "rollup_slots"
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
	fieldReshard      = "reshard"
	fieldCommits      = "commits" // of a shard
	fieldSlow         = "slow"    // of a shard
	fieldDelta        = "delta"
	fieldShard        = "shard"
	fieldExpireAt     = "expire_at"
	fieldHolder       = "holder"
)

// ShardDocument is the path pattern of shard documents, which the roll-up
// trigger watches.
const ShardDocument = CountersCollection + "/{counterId}/" + ShardsCollection + "/{shardId}"

// IdempotencyTTL is how long an idempotency key's record lives.
const IdempotencyTTL = 24 * time.Hour

// maxCached bounds the shard counts (and contention flags) one instance
// remembers; the least recently used are forgotten first.
const maxCached = 100_000

// CountersOptions configure a Counters store.
type CountersOptions struct {
	// ShardCountCache is how long a counter's shard count is used before it
	// is read again (SHARD_COUNT_CACHE).
	ShardCountCache time.Duration
	// SlowCommit marks a commit as contended (AUTO_SHARDING_SLOW_COMMIT).
	SlowCommit time.Duration
}

// Counters stores sharded counters:
//
//	counters/{id}                          num_shards, count, rollup_as_of, created_at, rollups,
//	                                       shard_commits, slow_commits, write_rate, reshard
//	counters/{id}/shards/{0..N-1}          count, commits, slow (created by the first increment landing on it)
//	counters/{id}/idempotency_keys/{hash}  delta, shard, expire_at (TTL)
//	counters/{id}/rollup_slots/{due}       holder, expire_at (TTL): a roll-up claimed for due
type Counters struct {
	db   *DB
	opts CountersOptions
	now  func() time.Time

	shardCounts *lru.Cache[string, cachedShards]
	contended   *lru.Cache[string, bool] // the last commit of the counter was slow or refused
}

type cachedShards struct {
	n       int
	expires time.Time
}

// NewCounters returns the counter store on db.
func NewCounters(db *DB, opts CountersOptions) *Counters {
	shardCounts, _ := lru.New[string, cachedShards](maxCached) // size > 0 never fails
	contended, _ := lru.New[string, bool](maxCached)
	return &Counters{db: db, opts: opts, now: time.Now, shardCounts: shardCounts, contended: contended}
}

func (s *Counters) ref(id string) *firestore.DocumentRef {
	return s.db.client.Collection(CountersCollection).Doc(id)
}

func (s *Counters) shardRef(id string, k int) *firestore.DocumentRef {
	return s.ref(id).Collection(ShardsCollection).Doc(strconv.Itoa(k))
}

func notFound(id string) error { return errs.New(errs.NotFound, "counter %q does not exist", id) }

// Create creates a counter with n shards. It writes one document whatever n
// is: shards appear when the first increment lands on them.
func (s *Counters) Create(ctx context.Context, id string, n int) (counter.Counter, error) {
	w := createWrite(s.ref(id).Path, map[string]*pb.Value{
		fieldNumShards: intValue(int64(n)),
		fieldCount:     intValue(0),
		fieldRollups:   intValue(0),
	})
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldAsOf), serverTime(fieldCreatedAt)}
	resp, err := s.db.commit(ctx, w)
	if code(err) == codes.AlreadyExists {
		return counter.Counter{}, errs.New(errs.AlreadyExists, "counter %q already exists", id)
	}
	if err != nil {
		return counter.Counter{}, classify(err, "create counter "+id)
	}
	s.remember(id, n, s.now())
	at := resp.GetCommitTime().AsTime()
	return counter.Counter{ID: id, NumShards: n, AsOf: at, Version: at}, nil
}

func serverTime(field string) *pb.DocumentTransform_FieldTransform {
	return &pb.DocumentTransform_FieldTransform{FieldPath: field,
		TransformType: &pb.DocumentTransform_FieldTransform_SetToServerValue{SetToServerValue: pb.DocumentTransform_FieldTransform_REQUEST_TIME}}
}

// Read reads the counter document; NOT_FOUND if the counter does not exist.
func (s *Counters) Read(ctx context.Context, id string) (counter.Counter, error) {
	start := s.now()
	snap, err := s.db.get(ctx, s.ref(id))
	if code(err) == codes.NotFound {
		return counter.Counter{}, notFound(id)
	}
	if err != nil {
		return counter.Counter{}, classify(err, "read counter "+id)
	}
	c, err := decodeCounter(snap)
	if err != nil {
		return counter.Counter{}, err
	}
	s.remember(id, c.NumShards, start)
	return c, nil
}

// counterDoc is the stored form of a counter document.
type counterDoc struct {
	NumShards    int        `firestore:"num_shards"`
	Count        int64      `firestore:"count"`
	AsOf         time.Time  `firestore:"rollup_as_of"`
	ShardCommits int64      `firestore:"shard_commits"`
	SlowCommits  int64      `firestore:"slow_commits"`
	WriteRate    float64    `firestore:"write_rate"`
	Reshard      reshardDoc `firestore:"reshard"`
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
		WriteRate: d.WriteRate,
		Reshard:   counter.Reshard(d.Reshard),
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

// NumShards returns a counter's shard count, from a per-instance cache
// (SHARD_COUNT_CACHE): reading the counter document on every increment
// would cost a read each and load the very document the shards protect.
// A resharded count reaches every instance within the cache's lifetime,
// which is why shrinking keeps merging for that long.
func (s *Counters) NumShards(ctx context.Context, id string) (int, error) {
	if c, ok := s.shardCounts.Get(id); ok && s.now().Before(c.expires) {
		return c.n, nil
	}
	c, err := s.Read(ctx, id)
	return c.NumShards, err
}

// remember caches n for id, valid from readStart (when the read that saw it
// began, so the cache never outlives the bound reshards count on).
func (s *Counters) remember(id string, n int, readStart time.Time) {
	s.shardCounts.Add(id, cachedShards{n: n, expires: readStart.Add(s.opts.ShardCountCache)})
}

// Sum returns the exact value of a counter now, a SUM over its shards (one
// billed read per 1,000 shards), with the snapshot's read time.
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

// WriteRollup stores c's roll-up (Count, AsOf, Sums, WriteRate) on the
// counter document if it is still at c.Version, and returns the new
// version; ok is false if the document changed or is gone. With reshard,
// c.NumShards and c.Reshard are written too, in the same write.
func (s *Counters) WriteRollup(ctx context.Context, c counter.Counter, reshard bool) (time.Time, bool, error) {
	fields := map[string]*pb.Value{
		fieldCount:        intValue(c.Count),
		fieldAsOf:         timeValue(c.AsOf),
		fieldShardCommits: intValue(c.Sums.Commits),
		fieldSlowCommits:  intValue(c.Sums.Slow),
		fieldWriteRate:    {ValueType: &pb.Value_DoubleValue{DoubleValue: c.WriteRate}},
	}
	if reshard {
		fields[fieldNumShards] = intValue(int64(c.NumShards))
		fields[fieldReshard] = reshardValue(c.Reshard)
	}
	w := updateWrite(s.ref(c.ID).Path, fields, slices.Sorted(maps.Keys(fields)), c.Version)
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{{FieldPath: fieldRollups,
		TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: intValue(1)}}}
	resp, err := s.db.commit(ctx, w)
	switch code(err) {
	case codes.OK:
		if reshard {
			s.remember(c.ID, c.NumShards, s.now())
		}
		return resp.GetWriteResults()[0].GetUpdateTime().AsTime(), true, nil
	case codes.FailedPrecondition, codes.NotFound:
		return time.Time{}, false, nil
	}
	return time.Time{}, false, classify(err, "write the roll-up of "+c.ID)
}

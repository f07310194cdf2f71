package firestoredb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
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

func decodeCounter(snap *firestore.DocumentSnapshot) (counter.Counter, error) {
	var d counterDoc
	if err := snap.DataTo(&d); err != nil {
		return counter.Counter{}, fmt.Errorf("firestoredb: decode %s: %w", snap.Ref.Path, err)
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

// IncrementOp is one increment of a shared commit.
type IncrementOp struct {
	Delta int64
	// User and Key scope an idempotency key: the same key from two users
	// is two keys. An empty Key applies the delta without a record.
	User, Key string
}

// IncrementResult is the outcome of one IncrementOp.
type IncrementResult struct {
	Delta int64
	Shard int
	// Replayed is true when the key had been used: nothing was applied
	// and the first outcome is returned.
	Replayed bool
	Err      error
}

// Apply adds the deltas of ops to one random shard of counter id in one
// commit, with a record for each idempotency key in the same commit, and
// returns one result per op. A key used before, or twice among ops,
// replays its first outcome (or is ALREADY_EXISTS with another delta)
// without failing the others. Every result is either applied exactly once
// or an error; an UNAVAILABLE error may hide a commit that was applied
// after all (its answer was lost), which a retry with the same key settles.
func (s *Counters) Apply(ctx context.Context, id string, ops []IncrementOp) []IncrementResult {
	results := make([]IncrementResult, len(ops))
	n, err := s.NumShards(ctx, id)
	if err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	shard := rand.IntN(n)
	b := batch{s: s, id: id, shard: shard, ops: ops, results: results, replace: map[int]time.Time{}}
	b.dedupe()
	// Each retry follows a concurrent change of a key's record; three in a
	// row means something keeps rewriting it.
	for range 3 {
		if len(b.pending) == 0 {
			break
		}
		start := s.now()
		_, err := s.db.commit(ctx, b.writes()...)
		s.noteContention(id, s.now().Sub(start), err)
		switch code(err) {
		case codes.OK:
			for _, i := range b.pending {
				results[i] = IncrementResult{Delta: ops[i].Delta, Shard: shard}
			}
			b.pending = nil
		case codes.AlreadyExists, codes.FailedPrecondition:
			if err := b.settleUsedKeys(ctx); err != nil {
				b.fail(err)
			}
		default:
			b.fail(classify(err, "increment "+id))
		}
	}
	b.fail(errs.Retryable(nil, retryAfter, "Idempotency-Key is being reused concurrently; retry"))
	b.resolveDuplicates()
	return results
}

// batch is the state of one Apply.
type batch struct {
	s       *Counters
	id      string
	shard   int
	ops     []IncrementOp
	results []IncrementResult
	// pending are the ops to commit; dupOf[i] >= 0 is the earlier op with
	// the same key, whose outcome op i shares; replace holds the update
	// time of an expired record to overwrite.
	pending []int
	dupOf   []int
	replace map[int]time.Time
}

func (b *batch) dedupe() {
	first := map[string]int{}
	b.dupOf = make([]int, len(b.ops))
	for i, op := range b.ops {
		b.dupOf[i] = -1
		if op.Key != "" {
			h := keyHash(op.User, op.Key)
			if j, ok := first[h]; ok {
				b.dupOf[i] = j
				continue
			}
			first[h] = i
		}
		b.pending = append(b.pending, i)
	}
}

func (b *batch) fail(err error) {
	for _, i := range b.pending {
		b.results[i].Err = err
	}
	b.pending = nil
}

// writes is the commit of the pending ops: the shard's increment, then
// each key's record, created (or replacing an expired one).
func (b *batch) writes() []*pb.Write {
	var sum int64
	for _, i := range b.pending {
		sum += b.ops[i].Delta
	}
	// Always all three fields: see Activity.
	deltas := map[string]int64{fieldCount: sum, fieldCommits: 1, fieldSlow: 0}
	if contended, _ := b.s.contended.Get(b.id); contended {
		deltas[fieldSlow] = 1
	}
	writes := []*pb.Write{incrementWrite(b.s.shardRef(b.id, b.shard).Path, deltas)}
	expire := b.s.now().Add(IdempotencyTTL)
	for _, i := range b.pending {
		op := b.ops[i]
		if op.Key == "" {
			continue
		}
		record := map[string]*pb.Value{fieldDelta: intValue(op.Delta), fieldShard: intValue(int64(b.shard)), fieldExpireAt: timeValue(expire)}
		name := b.s.keyRef(b.id, op.User, op.Key).Path
		if at, ok := b.replace[i]; ok {
			writes = append(writes, replaceWrite(name, record, at))
		} else {
			writes = append(writes, createWrite(name, record))
		}
	}
	return writes
}

// settleUsedKeys reads the records of the pending keys after a commit
// failed on one of them: a live record answers its op (replay or
// conflict), an expired one is to be replaced, and the rest stay pending.
func (b *batch) settleUsedKeys(ctx context.Context) error {
	var keyed []int
	var refs []*firestore.DocumentRef
	for _, i := range b.pending {
		if op := b.ops[i]; op.Key != "" {
			keyed = append(keyed, i)
			refs = append(refs, b.s.keyRef(b.id, op.User, op.Key))
		}
	}
	snaps, err := b.s.db.getAll(ctx, refs)
	if err != nil {
		return classify(err, "read idempotency keys of "+b.id)
	}
	settled := map[int]bool{}
	for j, snap := range snaps {
		i := keyed[j]
		if !snap.Exists() {
			delete(b.replace, i) // expired and deleted in between: create it
			continue
		}
		var prev struct {
			Delta    int64     `firestore:"delta"`
			Shard    int       `firestore:"shard"`
			ExpireAt time.Time `firestore:"expire_at"`
		}
		if err := snap.DataTo(&prev); err != nil {
			return fmt.Errorf("firestoredb: decode %s: %w", snap.Ref.Path, err)
		}
		if prev.ExpireAt.Before(b.s.now()) {
			// Firestore's TTL deletes within a day of expiry; until then an
			// expired key is treated as new, replacing the exact version read.
			b.replace[i] = snap.UpdateTime
			continue
		}
		settled[i] = true
		if prev.Delta != b.ops[i].Delta {
			b.results[i].Err = keyConflict(b.id, prev.Delta)
		} else {
			b.results[i] = IncrementResult{Delta: prev.Delta, Shard: prev.Shard, Replayed: true}
		}
	}
	b.pending = slices.DeleteFunc(b.pending, func(i int) bool { return settled[i] })
	return nil
}

func keyConflict(id string, delta int64) error {
	return &errs.Error{Code: errs.AlreadyExists, Field: "idempotency_key",
		Message: fmt.Sprintf("Idempotency-Key was already used on counter %q with delta %d", id, delta)}
}

// resolveDuplicates gives each op whose key appeared earlier in the batch
// the outcome of that earlier op, as a replay.
func (b *batch) resolveDuplicates() {
	for i, j := range b.dupOf {
		if j < 0 {
			continue
		}
		switch first := b.results[j]; {
		case first.Err != nil:
			b.results[i].Err = first.Err
		case first.Delta != b.ops[i].Delta:
			b.results[i].Err = keyConflict(b.id, first.Delta)
		default:
			b.results[i] = IncrementResult{Delta: first.Delta, Shard: first.Shard, Replayed: true}
		}
	}
}

// noteContention remembers whether the last commit of counter id was slow
// or refused for contention, so the next commit records it on its shard.
func (s *Counters) noteContention(id string, took time.Duration, err error) {
	slow := took > s.opts.SlowCommit && s.opts.SlowCommit > 0
	switch code(err) {
	case codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
		slow = true
	}
	if slow {
		s.contended.Add(id, true)
	} else if err == nil {
		s.contended.Remove(id)
	}
}

// keyRef names a key's record by the SHA-256 of its user and key, so any
// header value makes a valid document id and users cannot share keys.
func (s *Counters) keyRef(id, user, key string) *firestore.DocumentRef {
	return s.ref(id).Collection(KeysCollection).Doc(keyHash(user, key))
}

func keyHash(user, key string) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(user)))
	h.Write(n[:])
	h.Write([]byte(user))
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
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

// ClaimSlot records that holder will make sure counter id has a roll-up
// as of due or later, unless another holder did first, and returns the
// holder of the slot: holder itself if it won, or a retry of it finds its
// own claim.
func (s *Counters) ClaimSlot(ctx context.Context, id string, due time.Time, holder string) (string, error) {
	ref := s.ref(id).Collection(SlotsCollection).Doc(strconv.FormatInt(due.UnixNano(), 10))
	_, err := s.db.commit(ctx, createWrite(ref.Path, map[string]*pb.Value{
		fieldHolder: stringValue(holder), fieldExpireAt: timeValue(due.Add(time.Hour)),
	}))
	switch code(err) {
	case codes.OK:
		return holder, nil
	case codes.AlreadyExists:
		snap, err := s.db.get(ctx, ref)
		if err != nil {
			return "", classify(err, "read the roll-up slot of "+id)
		}
		owner, _ := snap.Data()[fieldHolder].(string)
		return owner, nil
	}
	return "", classify(err, "claim a roll-up slot of "+id)
}

// CounterIDs lists up to limit counter ids after the given one, in id
// order.
func (s *Counters) CounterIDs(ctx context.Context, after string, limit int) ([]string, error) {
	q := s.db.client.Collection(CountersCollection).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	docs, err := s.db.queryAll(ctx, q.Select())
	if err != nil {
		return nil, classify(err, "list counters")
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.Ref.ID
	}
	return ids, nil
}

// ReconcileCursor is where the resumable reconcile sweep stands.
type ReconcileCursor struct {
	After       string    `firestore:"after"`        // last counter id checked; "" at the start of a pass
	PassStarted time.Time `firestore:"pass_started"` // when the current pass began
	Passes      int64     `firestore:"passes"`       // completed passes
}

func (s *Counters) cursorRef() *firestore.DocumentRef {
	return s.db.client.Collection(StateCollection).Doc("reconcile")
}

// LoadReconcileCursor reads the sweep's cursor (zero before the first run).
func (s *Counters) LoadReconcileCursor(ctx context.Context) (ReconcileCursor, error) {
	snap, err := s.db.get(ctx, s.cursorRef())
	if code(err) == codes.NotFound {
		return ReconcileCursor{}, nil
	}
	if err != nil {
		return ReconcileCursor{}, classify(err, "read the reconcile cursor")
	}
	var c ReconcileCursor
	if err := snap.DataTo(&c); err != nil {
		return ReconcileCursor{}, fmt.Errorf("firestoredb: decode the reconcile cursor: %w", err)
	}
	return c, nil
}

// SaveReconcileCursor stores the sweep's cursor.
func (s *Counters) SaveReconcileCursor(ctx context.Context, c ReconcileCursor) error {
	_, err := s.db.commit(ctx, &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{
		Name: s.cursorRef().Path,
		Fields: map[string]*pb.Value{
			"after": stringValue(c.After), "pass_started": timeValue(c.PassStarted), "passes": intValue(c.Passes),
		},
	}}})
	return classify(err, "save the reconcile cursor")
}

// Reshard sets counter id's shard count to n and returns the counter
// before and after. Shrinking records until when shards >= n may still be
// written (now + mergeFor); the caller then merges them (MergeShards). A
// counter still merging after a shrink refuses another reshard with
// FAILED_PRECONDITION.
func (s *Counters) Reshard(ctx context.Context, id string, n int, mergeFor time.Duration, reason string) (before, after counter.Counter, err error) {
	for range 5 {
		c, err := s.Read(ctx, id)
		if err != nil {
			return counter.Counter{}, counter.Counter{}, err
		}
		if c.Reshard.Merging() {
			return c, c, &errs.Error{Code: errs.FailedPrecondition, Field: "num_shards", RetryAfter: time.Until(c.Reshard.MergeUntil) + time.Second,
				Message: fmt.Sprintf("num_shards cannot change while counter %q merges the shards of its shrink from %d to %d (until about %s)",
					id, c.Reshard.From, c.Reshard.To, c.Reshard.MergeUntil.UTC().Format(time.RFC3339))}
		}
		if c.NumShards == n {
			return c, c, nil
		}
		next := c
		now := s.now()
		next.NumShards = n
		next.Reshard = counter.Reshard{From: c.NumShards, To: n, At: now, Reason: reason}
		if n < c.NumShards {
			next.Reshard.MergeUntil = now.Add(mergeFor)
		} else {
			next.Reshard.MergedAt = now // nothing to merge
		}
		fields := map[string]*pb.Value{fieldNumShards: intValue(int64(n)), fieldReshard: reshardValue(next.Reshard)}
		resp, err := s.db.commit(ctx, updateWrite(s.ref(id).Path, fields, []string{fieldNumShards, fieldReshard}, c.Version))
		switch code(err) {
		case codes.OK:
			next.Version = resp.GetWriteResults()[0].GetUpdateTime().AsTime()
			s.remember(id, n, now)
			return c, next, nil
		case codes.FailedPrecondition:
			continue // a roll-up wrote in between: read again
		case codes.NotFound:
			return counter.Counter{}, counter.Counter{}, notFound(id)
		}
		return counter.Counter{}, counter.Counter{}, classify(err, "reshard "+id)
	}
	return counter.Counter{}, counter.Counter{}, errs.Retryable(nil, retryAfter, "counter %q keeps changing; retry", id)
}

// mergeChunk bounds the shards merged in one commit: a delete each, plus
// one increment per target shard, within Firestore's 500 writes.
const mergeChunk = 200

// MergeShards moves shards to..from-1 of counter id into shards k mod to:
// each one's count (and commit counters) is added to its target and it is
// deleted, in one commit, if it did not change since it was read. Strong
// reads stay exact throughout. It returns how many shards it merged.
func (s *Counters) MergeShards(ctx context.Context, id string, to, from int) (int, error) {
	merged := 0
	for lo := to; lo < from; lo += mergeChunk {
		hi := min(lo+mergeChunk, from)
		for attempt := 0; ; attempt++ {
			n, err := s.mergeRange(ctx, id, to, lo, hi)
			if err == nil {
				merged += n
				break
			}
			if code(err) != codes.FailedPrecondition || attempt == 5 {
				return merged, classify(err, "merge the shards of "+id)
			}
			// A shard was written after it was read (an instance that
			// still caches the old shard count): read them again.
		}
	}
	return merged, nil
}

func (s *Counters) mergeRange(ctx context.Context, id string, to, lo, hi int) (int, error) {
	refs := make([]*firestore.DocumentRef, 0, hi-lo)
	for k := lo; k < hi; k++ {
		refs = append(refs, s.shardRef(id, k))
	}
	snaps, err := s.db.getAll(ctx, refs)
	if err != nil {
		return 0, err
	}
	var writes []*pb.Write
	targets := map[int]map[string]int64{}
	for i, snap := range snaps {
		if !snap.Exists() {
			continue
		}
		var shard struct {
			Count   int64 `firestore:"count"`
			Commits int64 `firestore:"commits"`
			Slow    int64 `firestore:"slow"`
		}
		if err := snap.DataTo(&shard); err != nil {
			return 0, fmt.Errorf("decode %s: %w", snap.Ref.Path, err)
		}
		t := counter.MergeTarget(lo+i, to)
		if targets[t] == nil {
			targets[t] = map[string]int64{}
		}
		targets[t][fieldCount] += shard.Count
		targets[t][fieldCommits] += shard.Commits
		targets[t][fieldSlow] += shard.Slow
		writes = append(writes, deleteWrite(snap.Ref.Path, snap.UpdateTime))
	}
	if len(writes) == 0 {
		return 0, nil
	}
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		writes = append(writes, incrementWrite(s.shardRef(id, t).Path, targets[t]))
	}
	if _, err := s.db.commit(ctx, writes...); err != nil {
		return 0, err
	}
	return len(writes) - len(targets), nil
}

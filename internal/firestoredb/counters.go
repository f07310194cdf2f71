package firestoredb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/rollup"
)

// Collection and field names of the counters data model (README "Data
// model"); security rules and the roll-up trigger depend on them.
const (
	CountersCollection = "counters"
	ShardsCollection   = "shards"
	KeysCollection     = "idempotency_keys"
	SlotsCollection    = "rollup_slots"

	FieldNumShards  = "num_shards"
	FieldCount      = "count"
	FieldAsOf       = "rollup_as_of"
	FieldCreatedAt  = "created_at"
	FieldRollups    = "rollups"
	FieldDelta      = "delta"
	FieldShard      = "shard"
	FieldExpireAt   = "expire_at"
	IdempotencyTTL  = 24 * time.Hour
	metaCacheTTL    = 5 * time.Minute
	metaCacheMaxLen = 100_000
)

// Counters stores sharded counters:
//
//	counters/{id}                          num_shards, count, rollup_as_of, created_at, rollups
//	counters/{id}/shards/{0..N-1}          count (created by the first increment landing on it)
//	counters/{id}/idempotency_keys/{hash}  delta, shard, expire_at (TTL)
//	counters/{id}/rollup_slots/{due}       expire_at (TTL): a roll-up claimed for due
type Counters struct {
	db  *DB
	now func() time.Time

	mu   sync.Mutex
	meta map[string]cachedShards
}

type cachedShards struct {
	n       int
	expires time.Time
}

// NewCounters returns the counter store on db.
func NewCounters(db *DB) *Counters {
	return &Counters{db: db, now: time.Now, meta: map[string]cachedShards{}}
}

// Ref returns counters/{id}.
func (s *Counters) Ref(id string) *firestore.DocumentRef {
	return s.db.Client.Collection(CountersCollection).Doc(id)
}

// Shards returns counters/{id}/shards.
func (s *Counters) Shards(id string) *firestore.CollectionRef {
	return s.Ref(id).Collection(ShardsCollection)
}

// Create creates a counter with n shards. It writes one document whatever n
// is: shards appear when the first increment lands on them.
func (s *Counters) Create(ctx context.Context, id string, n int) (counter.Counter, error) {
	res, err := s.Ref(id).Create(ctx, map[string]any{
		FieldNumShards: n,
		FieldCount:     0,
		FieldAsOf:      firestore.ServerTimestamp,
		FieldCreatedAt: firestore.ServerTimestamp,
		FieldRollups:   0,
	})
	if Code(err) == codes.AlreadyExists {
		return counter.Counter{}, errs.New(errs.AlreadyExists, "counter %q already exists", id)
	}
	if err != nil {
		return counter.Counter{}, Classify(err, "create counter")
	}
	return counter.Counter{ID: id, NumShards: n, AsOf: res.UpdateTime}, nil
}

// Increment is the outcome of one accepted write.
type Increment struct {
	Delta int64
	Shard int
	// Replayed is true when the idempotency key had been seen: nothing was
	// applied and the first outcome is returned.
	Replayed bool
}

// Increment adds delta to a random shard of counter id. With a non-empty
// key, the key's record is created in the same commit, so the same key on
// the same counter applies once; a repeat answers the first outcome.
func (s *Counters) Increment(ctx context.Context, id string, delta int64, key string) (Increment, error) {
	n, err := s.numShards(ctx, id)
	if err != nil {
		return Increment{}, err
	}
	shard := rand.IntN(n)
	inc := IncrementWrite(s.Shards(id).Doc(strconv.Itoa(shard)).Path, FieldCount, delta)
	if key == "" {
		_, err := s.db.Commit(ctx, inc)
		return Increment{Delta: delta, Shard: shard}, Classify(err, "increment")
	}

	keyRef := s.keyRef(id, key)
	record := map[string]*pb.Value{
		FieldDelta:    Int(delta),
		FieldShard:    Int(int64(shard)),
		FieldExpireAt: Time(s.now().Add(IdempotencyTTL)),
	}
	// Each retry follows a concurrent change of the key's record; three
	// in a row means something keeps rewriting it.
	for range 3 {
		_, err := s.db.Commit(ctx, CreateWrite(keyRef.Path, record), inc)
		if Code(err) != codes.AlreadyExists {
			return Increment{Delta: delta, Shard: shard}, Classify(err, "increment")
		}
		snap, err := keyRef.Get(ctx)
		if Code(err) == codes.NotFound {
			continue // expired and deleted in between: try again
		}
		if err != nil {
			return Increment{}, Classify(err, "read idempotency key")
		}
		var prev struct {
			Delta    int64     `firestore:"delta"`
			Shard    int       `firestore:"shard"`
			ExpireAt time.Time `firestore:"expire_at"`
		}
		if err := snap.DataTo(&prev); err != nil {
			return Increment{}, err
		}
		if prev.ExpireAt.Before(s.now()) {
			// Firestore's TTL deletes within a day of expiry; until then an
			// expired key is treated as new, replacing the exact version read.
			_, err := s.db.Commit(ctx, ReplaceWrite(keyRef.Path, record, snap.UpdateTime), inc)
			if Code(err) == codes.FailedPrecondition {
				continue // someone else reused it first
			}
			return Increment{Delta: delta, Shard: shard}, Classify(err, "increment")
		}
		if prev.Delta != delta {
			return Increment{}, errs.New(errs.AlreadyExists,
				"Idempotency-Key was already used on counter %q with delta %d", id, prev.Delta)
		}
		return Increment{Delta: prev.Delta, Shard: prev.Shard, Replayed: true}, nil
	}
	return Increment{}, &errs.Error{Code: errs.Unavailable, Message: "Idempotency-Key is being reused concurrently; retry", RetryAfter: time.Second}
}

// keyRef names a key's record by its SHA-256, so any header value makes a
// valid document id.
func (s *Counters) keyRef(id, key string) *firestore.DocumentRef {
	sum := sha256.Sum256([]byte(key))
	return s.Ref(id).Collection(KeysCollection).Doc(hex.EncodeToString(sum[:]))
}

// numShards returns a counter's shard count, from a per-process cache: it
// never changes after creation, and reading the counter document on every
// increment would cost a read each and load the very document the shards
// protect.
func (s *Counters) numShards(ctx context.Context, id string) (int, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.meta[id]
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.n, nil
	}
	got, err := s.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	return got.NumShards, nil
}

func (s *Counters) remember(id string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.meta) >= metaCacheMaxLen {
		for k := range s.meta { // drop an arbitrary entry
			delete(s.meta, k)
			break
		}
	}
	s.meta[id] = cachedShards{n: n, expires: s.now().Add(metaCacheTTL)}
}

// Get reads the counter document: its shard count and the roll-up total with
// the time it is exact at.
func (s *Counters) Get(ctx context.Context, id string) (counter.Counter, error) {
	snap, err := s.Ref(id).Get(ctx)
	if Code(err) == codes.NotFound {
		return counter.Counter{}, errs.New(errs.NotFound, "counter %q does not exist", id)
	}
	if err != nil {
		return counter.Counter{}, Classify(err, "read counter")
	}
	c, err := decodeCounter(snap)
	if err != nil {
		return counter.Counter{}, err
	}
	s.remember(id, c.NumShards)
	return c, nil
}

func decodeCounter(snap *firestore.DocumentSnapshot) (counter.Counter, error) {
	var doc struct {
		NumShards int       `firestore:"num_shards"`
		Count     int64     `firestore:"count"`
		AsOf      time.Time `firestore:"rollup_as_of"`
	}
	if err := snap.DataTo(&doc); err != nil {
		return counter.Counter{}, err
	}
	return counter.Counter{ID: snap.Ref.ID, NumShards: doc.NumShards, Count: doc.Count, AsOf: doc.AsOf}, nil
}

// Sum returns the exact value of a counter now: a SUM aggregation over its
// shards (one billed read per 1,000 shards), with the snapshot's read time.
func (s *Counters) Sum(ctx context.Context, id string) (counter.Counter, error) {
	n, err := s.numShards(ctx, id)
	if err != nil {
		return counter.Counter{}, err
	}
	total, at, err := s.db.Sum(ctx, s.Shards(id), FieldCount)
	if err != nil {
		return counter.Counter{}, Classify(err, "sum shards")
	}
	return counter.Counter{ID: id, NumShards: n, Count: total, AsOf: at}, nil
}

// RollupState reads what the roll-up needs of the counter document.
func (s *Counters) RollupState(ctx context.Context, id string) (rollup.State, error) {
	snap, err := s.Ref(id).Get(ctx)
	if Code(err) == codes.NotFound {
		return rollup.State{}, errs.New(errs.NotFound, "counter %q does not exist", id)
	}
	if err != nil {
		return rollup.State{}, fmt.Errorf("firestoredb: read counter %s: %w", id, err)
	}
	c, err := decodeCounter(snap)
	if err != nil {
		return rollup.State{}, err
	}
	return rollup.State{Count: c.Count, AsOf: c.AsOf, Version: snap.UpdateTime}, nil
}

// ShardTotal sums the shards of a counter with the snapshot's read time.
func (s *Counters) ShardTotal(ctx context.Context, id string) (int64, time.Time, error) {
	return s.db.Sum(ctx, s.Shards(id), FieldCount)
}

// WriteRollup stores a roll-up on the counter document if it is still at
// version, and counts the roll-up writes in FieldRollups.
func (s *Counters) WriteRollup(ctx context.Context, id string, total int64, asOf, version time.Time) (time.Time, bool, error) {
	res, err := s.Ref(id).Update(ctx, []firestore.Update{
		{Path: FieldCount, Value: total},
		{Path: FieldAsOf, Value: asOf},
		{Path: FieldRollups, Value: firestore.Increment(1)},
	}, firestore.LastUpdateTime(version))
	switch Code(err) {
	case codes.OK:
		return res.UpdateTime, true, nil
	case codes.FailedPrecondition, codes.NotFound:
		return time.Time{}, false, nil
	}
	return time.Time{}, false, fmt.Errorf("firestoredb: write roll-up of %s: %w", id, err)
}

// CounterIDs lists counter ids after the given one, in id order.
func (s *Counters) CounterIDs(ctx context.Context, after string, limit int) ([]string, error) {
	q := s.db.Client.Collection(CountersCollection).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	refs, err := q.Select().Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("firestoredb: list counters: %w", err)
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.Ref.ID
	}
	return ids, nil
}

// ClaimSlot creates the marker of the roll-up due at due; it returns false
// if the marker exists. Markers expire an hour after their due time.
func (s *Counters) ClaimSlot(ctx context.Context, id string, due time.Time) (bool, error) {
	ref := s.Ref(id).Collection(SlotsCollection).Doc(strconv.FormatInt(due.UnixNano(), 10))
	_, err := s.db.Commit(ctx, CreateWrite(ref.Path, map[string]*pb.Value{FieldExpireAt: Time(due.Add(time.Hour))}))
	switch Code(err) {
	case codes.OK:
		return true, nil
	case codes.AlreadyExists:
		return false, nil
	}
	return false, fmt.Errorf("firestoredb: claim roll-up slot of %s: %w", id, err)
}

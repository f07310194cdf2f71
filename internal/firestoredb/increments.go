package firestoredb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/errs"
)

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

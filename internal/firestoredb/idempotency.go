package firestoredb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/errs"
)

// IdempotencyTTL is how long an idempotency key's record lives.
const IdempotencyTTL = 24 * time.Hour

// keyName names a key's record by the SHA-256 of its user and key, so any
// header value makes a valid document id and users cannot share keys.
func (b *base) keyName(id, user, key string) string {
	return b.db.name(underCounter(id, KeysCollection) + "/" + keyHash(user, key))
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

// keyRecord is the stored outcome of a keyed op.
type keyRecord struct {
	Delta           int64
	Shard           int
	Member, Changed bool
	ExpireAt        time.Time
}

func keyRecordOf(pd *pb.Document) (keyRecord, error) {
	d := docOf(pd)
	r := keyRecord{Delta: d.integer(fieldDelta), Shard: int(d.integer(fieldShard)), Member: d.boolean(fieldMember),
		Changed: d.boolean(fieldChanged), ExpireAt: d.time(fieldExpireAt)}
	if err := d.done(); err != nil {
		return r, fmt.Errorf("firestoredb: decode %s: %w", pd.GetName(), err)
	}
	return r, nil
}

// dedupe queues every op, except one whose key an earlier op has: that
// one shares the earlier op's outcome.
func (p *incrementCommit) dedupe() {
	first := map[string]int{}
	p.dupOf = make([]int, len(p.ops))
	for i, op := range p.ops {
		p.dupOf[i] = -1
		if op.Key != "" {
			h := keyHash(op.User, op.Key)
			if j, ok := first[h]; ok {
				p.dupOf[i] = j
				continue
			}
			first[h] = i
		}
		p.pending = append(p.pending, i)
	}
}

// keyWrites creates each pending key's record (or replaces an expired
// one) with the outcome its op will have.
func (p *incrementCommit) keyWrites() []*pb.Write {
	var writes []*pb.Write
	expire := p.s.now().Add(IdempotencyTTL)
	for _, i := range p.pending {
		op := p.ops[i]
		if op.Key == "" {
			continue
		}
		o := p.outcome[i]
		record := map[string]*pb.Value{
			fieldDelta: intValue(op.Delta), fieldShard: intValue(int64(o.Shard)), fieldExpireAt: timeValue(expire),
		}
		if p.c.Unique {
			record[fieldMember], record[fieldChanged] = boolValue(o.Member), boolValue(o.Changed)
		}
		name := p.s.keyName(p.c.ID, op.User, op.Key)
		if at, ok := p.replace[i]; ok {
			writes = append(writes, replaceWrite(name, record, at))
		} else {
			writes = append(writes, createWrite(name, record))
		}
	}
	return writes
}

// settleUsedKeys reads the records of the pending keys after a commit
// failed on a precondition: a live record answers its op (replay or
// conflict), an expired one is to be replaced, and the rest stay pending
// (a member that changed is read again by the next prepare).
func (p *incrementCommit) settleUsedKeys(ctx context.Context) error {
	var keyed []int
	var names []string
	for _, i := range p.pending {
		if op := p.ops[i]; op.Key != "" {
			keyed = append(keyed, i)
			names = append(names, p.s.keyName(p.c.ID, op.User, op.Key))
		}
	}
	if len(names) == 0 {
		return nil
	}
	docs, _, err := p.s.db.getAt(ctx, names, time.Time{})
	if err != nil {
		return classify(err, "read idempotency keys of "+p.c.ID)
	}
	settled := map[int]bool{}
	for j, d := range docs {
		i := keyed[j]
		if d == nil {
			delete(p.replace, i) // expired and deleted in between: create it
			continue
		}
		prev, err := keyRecordOf(d)
		if err != nil {
			return err
		}
		if prev.ExpireAt.Before(p.s.now()) {
			// Firestore's TTL deletes within a day of expiry; until then an
			// expired key is treated as new, replacing the exact version read.
			p.replace[i] = d.GetUpdateTime().AsTime()
			continue
		}
		settled[i] = true
		if prev.Delta != p.ops[i].Delta {
			p.results[i].Err = keyConflict(p.c.ID, prev.Delta)
		} else {
			p.results[i] = IncrementResult{Delta: prev.Delta, Shard: prev.Shard, Replayed: true, Member: prev.Member, Changed: prev.Changed}
		}
	}
	p.pending = slices.DeleteFunc(p.pending, func(i int) bool { return settled[i] })
	return nil
}

func keyConflict(id string, delta int64) error {
	return &errs.Error{Code: errs.AlreadyExists, Field: "idempotency_key",
		Message: fmt.Sprintf("Idempotency-Key was already used on counter %q with delta %d", id, delta)}
}

// resolveDuplicates gives each op whose key appeared earlier in the batch
// the outcome of that earlier op, as a replay.
func (p *incrementCommit) resolveDuplicates() {
	for i, j := range p.dupOf {
		if j < 0 {
			continue
		}
		switch first := p.results[j]; {
		case first.Err != nil:
			p.results[i].Err = first.Err
		case first.Delta != p.ops[i].Delta:
			p.results[i].Err = keyConflict(p.c.ID, first.Delta)
		default:
			first.Replayed = true
			p.results[i] = first
		}
	}
}

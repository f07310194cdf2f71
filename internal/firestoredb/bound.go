package firestoredb

import (
	"context"
	"fmt"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// The bound: a plain counter's value stays within ±counter.MaxCount. An
// increment cannot check it against the exact value without summing the
// shards on every commit, so each instance keeps, per counter, a known
// value: an exact SUM the first time it commits to the counter (and again
// after SHARD_COUNT_CACHE), plus what it committed since. Within
// counter.CheckedZone of the bound, every commit sums first, and at the
// read time of its sum reads the version of the counter's guard document
// (counters/{id}/bound/guard): the commit is conditional on it and moves
// it, so two instances that summed the same value cannot both commit
// against it. (Not the counter document, whose version the roll-up
// follows and writes on the condition of: moved by every commit, it held
// the roll-up off.) Other
// instances' increments since the last sum are not in the known value: far
// from the bound they cannot close the gap within one cache lifetime
// unless they add more than CheckedZone (2^50) in it.

// knownValue is what this instance knows of a plain counter's value.
type knownValue struct {
	value   int64
	near    bool // within CheckedZone of the bound: sum before each commit
	expires time.Time
}

func nearBound(v int64) bool {
	const edge = counter.MaxCount - counter.CheckedZone
	return v > edge || v < -edge
}

// checkBound refuses, each alone (OUT_OF_RANGE), the pending ops that
// would take the counter past ±MaxCount, in arrival order.
func (p *incrementCommit) checkBound(ctx context.Context) error {
	s, id := p.s, p.c.ID
	kv, ok := s.known.Get(id)
	p.guard = nil
	if !ok || kv.near || !s.now().Before(kv.expires) {
		start := s.now()
		var sum int64
		var err error
		if ok && kv.near && !p.creates() {
			sum, p.guard, err = p.guardedSum(ctx)
		} else if sum, _, err = s.sum(ctx, id, time.Time{}); err == nil && nearBound(sum) && !p.creates() {
			sum, p.guard, err = p.guardedSum(ctx) // found near: again, guarded
		}
		if err != nil {
			return err
		}
		kv = knownValue{value: sum, near: nearBound(sum), expires: start.Add(s.opts.ShardCountCache)}
		s.known.Add(id, kv)
	}
	running := kv.value
	p.pending = slices.DeleteFunc(p.pending, func(i int) bool {
		next, ok := counter.Add(running, p.ops[i].Delta)
		if ok && counter.InBound(next) {
			running = next
			return false
		}
		p.results[i].Err = &errs.Error{Code: errs.OutOfRange, Field: "delta",
			Message: fmt.Sprintf("delta %d would take counter %q past ±%d, the largest value a counter holds (it holds about %d)",
				p.ops[i].Delta, id, int64(counter.MaxCount), running)}
		return true
	})
	return nil
}

// BoundCollection holds a counter's guard document, written only by
// commits near the bound.
const BoundCollection = "bound"

func (b *base) guardName(id string) string {
	return b.db.name(underCounter(id, BoundCollection) + "/guard")
}

// guardedSum sums the counter's shards, and reads its guard document's
// version (zero: absent), at one read time: the version the commit is
// conditional on.
func (p *incrementCommit) guardedSum(ctx context.Context) (int64, *time.Time, error) {
	docs, at, err := p.s.db.getAt(ctx, []string{p.s.guardName(p.c.ID)}, time.Time{})
	if err != nil {
		return 0, nil, classify(err, "read the bound's guard of "+p.c.ID)
	}
	var version time.Time
	if docs[0] != nil {
		version = docs[0].GetUpdateTime().AsTime()
	}
	sum, _, err := p.s.sum(ctx, p.c.ID, at)
	return sum, &version, err
}

// guardWrite moves the guard document's version from the one the sum saw
// (see guardedSum), or fails the commit if another commit moved it first.
func (p *incrementCommit) guardWrite() *pb.Write {
	name := p.s.guardName(p.c.ID)
	w := createWrite(name, nil)
	if !p.guard.IsZero() {
		w = updateWrite(name, nil, nil, *p.guard)
	}
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldGuardCheckedAt)}
	return w
}

// noteKnown adds a committed change to the known value of counter id; a
// shard found near the bound (written outside the functions) makes every
// later commit sum first.
func (s *Increments) noteKnown(id string, net, shardValue int64) {
	kv, ok := s.known.Get(id)
	if !ok {
		return
	}
	v, ok := counter.Add(kv.value, net)
	kv.value = v
	kv.near = kv.near || !ok || nearBound(v) || nearBound(shardValue)
	s.known.Add(id, kv)
}

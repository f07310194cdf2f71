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
// read time of its sum reads the counter document's version: the commit
// is conditional on it and moves it (bound_checked_at), so two instances
// that summed the same value cannot both commit against it. Other
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
	p.guard = time.Time{}
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

// guardedSum sums the counter's shards, and reads its document's version,
// at one read time: the version the commit is conditional on.
func (p *incrementCommit) guardedSum(ctx context.Context) (int64, time.Time, error) {
	c, at, err := p.s.storedAt(ctx, p.c.ID)
	switch {
	case err != nil:
		return 0, time.Time{}, err
	case c.IsDeleted():
		return 0, time.Time{}, notFound(p.c.ID)
	}
	sum, _, err := p.s.sum(ctx, p.c.ID, at)
	return sum, c.Version, err
}

// guardWrite moves the counter document's version from the one its sum
// saw (see guardedSum), or fails the commit if another moved it first.
func (p *incrementCommit) guardWrite() *pb.Write {
	w := updateWrite(p.s.counterName(p.c.ID), nil, nil, p.guard)
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldBoundCheckedAt)}
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

package incrementstore

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/shared"

	"time"
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
// the roll-up off.) Other instances' increments since the last sum are
// not in the known value: far from the bound they cannot close the gap
// within one cache lifetime unless they add more than CheckedZone (2⁵⁰)
// in it.

// plain commits the ops of a plain counter: their deltas add up on a
// shard at random, within the bound.
type plain struct {
	s *Store
	// guard is the version of the bound's guard the commit is conditional
	// on (nil: none, far from the bound).
	guard *time.Time
}

func (p *plain) known(_ counter.Counter, ops []increment.Op) (map[int]int, []int) {
	return noneKnown(ops)
}
func (p *plain) shard(c counter.Counter, _ []increment.Op) int { return p.s.anyShard(c) }
func (p *plain) read(ctx context.Context, b *increment.Batch) (map[string]increment.Membership, error) {
	var err error
	p.guard, err = p.s.checkBound(ctx, b)
	return nil, err
}
func (p *plain) unchanged(plan increment.Plan) bool { return plan.Empty() }
func (p *plain) shardWrites(b *increment.Batch, change shared.ShardChange) (*pb.Write, []*pb.Write) {
	return p.s.base.ShardWrite(b.Counter.ID, b.Shard, change), nil
}
func (p *plain) lastWrites(b *increment.Batch) []*pb.Write {
	if p.guard == nil {
		return nil
	}
	return []*pb.Write{p.s.guardWrite(b.Counter.ID, *p.guard)}
}

// landed adds what the commit wrote to the counter's known value.
func (p *plain) landed(b *increment.Batch, plan increment.Plan, resp *pb.CommitResponse) error {
	v, ok, err := saturated(b, plan, resp)
	if ok {
		p.s.noteKnown(b.Counter.ID, plan.Net, v)
	}
	if err != nil {
		return err
	}
	b.Committed(plan)
	return nil
}
func (p *plain) raced(*increment.Batch)                             {}
func (p *plain) recordFields(increment.Record) map[string]*pb.Value { return nil }

// knownValue is what this instance knows of a plain counter's value.
type knownValue struct {
	value   int64
	near    bool // within CheckedZone of the bound: sum before each commit
	expires time.Time
}

// checkBound refuses the pending ops that would take the counter past the
// bound from its known value, summing the shards first when it knows none
// (or an old one, or one near the bound). Near the bound it returns the
// guard's version the commit is conditional on.
func (s *Store) checkBound(ctx context.Context, b *increment.Batch) (*time.Time, error) {
	id := b.Counter.ID
	kv, ok := s.known.Get(id)
	var guard *time.Time
	if !ok || kv.near || !s.base.Now().Before(kv.expires) {
		start := s.base.Now()
		var sum int64
		var err error
		if ok && kv.near && !b.Creates() {
			sum, guard, err = s.guardedSum(ctx, id)
		} else if sum, _, err = s.counters.Sum(ctx, id, time.Time{}); err == nil && increment.NearBound(sum) && !b.Creates() {
			sum, guard, err = s.guardedSum(ctx, id) // found near: again, guarded
		}
		if err != nil {
			return nil, err
		}
		kv = knownValue{value: sum, near: increment.NearBound(sum), expires: start.Add(s.opts.ShardCountCache)}
		s.known.Add(id, kv)
	}
	b.RefuseBeyond(kv.value)
	return guard, nil
}

// guardedSum sums the counter's shards, and reads its guard document's
// version (zero: absent), at one read time: the version the commit is
// conditional on.
func (s *Store) guardedSum(ctx context.Context, id string) (int64, *time.Time, error) {
	docs, at, err := s.db.GetAll(ctx, []string{s.db.Name(dm.Guard(id))}, time.Time{})
	if err != nil {
		return 0, nil, fs.Classify(err, "read the bound's guard of "+id)
	}
	var version time.Time
	if docs[0] != nil {
		version = docs[0].GetUpdateTime().AsTime()
	}
	sum, _, err := s.counters.Sum(ctx, id, at)
	return sum, &version, err
}

// guardWrite moves the guard document's version from the one the sum saw
// (see guardedSum), or fails the commit if another commit moved it first.
func (s *Store) guardWrite(id string, version time.Time) *pb.Write {
	name := s.db.Name(dm.Guard(id))
	w := fs.CreateWrite(name, nil)
	if !version.IsZero() {
		w = fs.UpdateWrite(name, nil, nil, version)
	}
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldGuardCheckedAt)}
	return w
}

// noteKnown adds a committed change to the known value of counter id; a
// shard found near the bound (written outside the functions) makes every
// later commit sum first.
func (s *Store) noteKnown(id string, net, shardValue int64) {
	kv, ok := s.known.Get(id)
	if !ok {
		return
	}
	v, ok := counter.Add(kv.value, net)
	kv.value = v
	kv.near = kv.near || !ok || increment.NearBound(v) || increment.NearBound(shardValue)
	s.known.Add(id, kv)
}

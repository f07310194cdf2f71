package firestoredb

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// Reshard sets counter id's shard count to n and returns the counter
// before and after. Shrinking records until when shards >= n may still be
// written (now + mergeFor); the caller then merges them (MergeShards). A
// counter still merging after a shrink refuses another reshard with
// FAILED_PRECONDITION until merge_until; after it, Reshard finishes that
// merge itself and goes on.
func (s *Counters) Reshard(ctx context.Context, id string, n int, mergeFor time.Duration, reason string) (before, after counter.Counter, err error) {
	for range 5 {
		c, err := s.Read(ctx, id)
		if err != nil {
			return counter.Counter{}, counter.Counter{}, err
		}
		if c.Reshard.Merging() {
			if wait := c.Reshard.MergeUntil.Sub(s.now()); wait > 0 {
				return c, c, &errs.Error{Code: errs.FailedPrecondition, Field: "num_shards", RetryAfter: wait + time.Second,
					Message: fmt.Sprintf("num_shards cannot change while counter %q merges the shards of its shrink from %d to %d (until about %s)",
						id, c.Reshard.From, c.Reshard.To, c.Reshard.MergeUntil.UTC().Format(time.RFC3339))}
			}
			// No instance can write to the old shards any more: the last
			// merge, then the new shard count (which records it merged).
			if _, err := s.MergeShards(ctx, id, c.Reshard.To, c.Reshard.From); err != nil {
				return c, c, err
			}
			c.Reshard.MergedAt = s.now()
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
			s.remember(next, now)
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

// shardDoc is a shard's stored form.
type shardDoc struct {
	Count   int64 `firestore:"count"`
	Commits int64 `firestore:"commits"`
	Slow    int64 `firestore:"slow"`
}

// mergeRange merges shards lo..hi-1 into their targets in one commit. The
// sums are checked: a merge that would pass int64 (shards written outside
// the functions) is DATA_LOSS and changes nothing, where Firestore's
// increment would saturate silently.
func (s *Counters) mergeRange(ctx context.Context, id string, to, lo, hi int) (int, error) {
	refs := make([]*firestore.DocumentRef, 0, hi-lo+to)
	for k := lo; k < hi; k++ {
		refs = append(refs, s.shardRef(id, k))
	}
	targetAt := map[int]int{} // target shard -> its index in refs
	for k := lo; k < hi; k++ {
		if t := counter.MergeTarget(k, to); targetAt[t] == 0 {
			targetAt[t] = len(refs)
			refs = append(refs, s.shardRef(id, t))
		}
	}
	snaps, err := s.db.getAll(ctx, refs)
	if err != nil {
		return 0, err
	}
	decode := func(snap *firestore.DocumentSnapshot) (shardDoc, error) {
		var d shardDoc
		if !snap.Exists() {
			return d, nil
		}
		if err := snap.DataTo(&d); err != nil {
			return d, errs.Wrap(errs.DataLoss, err, "%s is malformed", snap.Ref.Path)
		}
		return d, nil
	}
	var writes []*pb.Write
	targets := map[int]map[string]int64{}
	values := map[int]int64{} // each target's count after the merge
	for i, snap := range snaps[:hi-lo] {
		if !snap.Exists() {
			continue
		}
		shard, err := decode(snap)
		if err != nil {
			return 0, err
		}
		t := counter.MergeTarget(lo+i, to)
		if targets[t] == nil {
			target, err := decode(snaps[targetAt[t]])
			if err != nil {
				return 0, err
			}
			targets[t], values[t] = map[string]int64{}, target.Count
		}
		v, ok := counter.Add(values[t], shard.Count)
		if !ok {
			return 0, errs.New(errs.DataLoss, "merging shard %d of counter %q into shard %d would pass int64: its shards were written outside the functions", lo+i, id, t)
		}
		values[t] = v
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

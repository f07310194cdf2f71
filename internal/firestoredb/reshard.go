package firestoredb

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
)

// Reshard sets counter id's shard count to n and returns the counter
// before and after. Shrinking records until when shards >= n may still be
// written (mergeFor after its commit lands at the latest: ctx's deadline), and merges what exists now (merged says how
// many); the roll-up, reconcile or the next reshard merges again once no
// instance can still write to them. A counter still merging after a
// shrink refuses another reshard with FAILED_PRECONDITION until
// merge_until; after it, Reshard finishes that merge itself and goes on.
func (s *Counters) Reshard(ctx context.Context, id string, n int, mergeFor time.Duration, reason string) (before, after counter.Counter, merged int, err error) {
	var next counter.Counter
	sent := s.now() // no later than the commit: when what it wrote is known from
	c, resp, err := s.update(ctx, id, false, "reshard", func(c counter.Counter, _ time.Time) ([]*pb.Write, error) {
		if c.Reshard.Merging() {
			if wait := c.Reshard.MergeUntil.Sub(s.now()); wait > 0 {
				return nil, &errs.Error{Code: errs.FailedPrecondition, Field: "num_shards", RetryAfter: wait + time.Second,
					Message: fmt.Sprintf("num_shards cannot change while counter %q merges the shards of its shrink from %d to %d (until about %s)",
						id, c.Reshard.From, c.Reshard.To, c.Reshard.MergeUntil.UTC().Format(time.RFC3339))}
			}
			// No instance can write to the old shards any more: the last
			// merge, then the new shard count (which records it merged).
			if _, err := s.mergeShards(ctx, id, c.Reshard.To, c.Reshard.From); err != nil {
				return nil, err
			}
			c.Reshard.MergedAt = s.now()
		}
		if c.NumShards == n {
			next = c
			return nil, nil
		}
		now := s.now()
		next = c
		next.NumShards = n
		next.Reshard = counter.Reshard{From: c.NumShards, To: n, At: now, Reason: reason}
		if n < c.NumShards {
			next.Reshard.MergeUntil = landsBy(ctx, now).Add(mergeFor) // the shard count may be read as it was until the commit lands
		} else {
			next.Reshard.MergedAt = now // nothing to merge
		}
		fields := map[string]*pb.Value{fieldNumShards: intValue(int64(n)), fieldReshard: reshardValue(next.Reshard)}
		writes := []*pb.Write{updateWrite(s.counterName(id), fields, []string{fieldNumShards, fieldReshard}, c.Version)}
		if n < c.NumShards {
			writes = append(writes, s.activityWrite(id, next.Reshard.MergeUntil)) // reconcile merges then, if nobody writes it
		}
		return writes, nil
	})
	if err != nil {
		return c, c, 0, err
	}
	if resp == nil {
		return next, next, 0, nil // the count it has (a finished merge is recorded by the next reshard or roll-up)
	}
	next.Version = versionOf(resp, 0)
	s.remember(next, sent)
	if n < c.NumShards {
		merged, err = s.mergeShards(ctx, id, n, c.NumShards)
		if err != nil {
			logging.FromContext(ctx).Warn("the first merge of a shrink failed; the roll-up or reconcile will finish it", "error", err.Error())
		}
	}
	return c, next, merged, nil
}

// MergeShards moves shards to..from-1 of counter id into shards k mod to
// (see Rollups.MergeShards).
func (s *Counters) MergeShards(ctx context.Context, id string, to, from int) (int, error) {
	return s.mergeShards(ctx, id, to, from)
}

// mergeChunk bounds the shards merged in one commit: a delete each, plus
// one increment per target shard, within Firestore's 500 writes.
const mergeChunk = 200

// mergeShards moves shards to..from-1 of counter id into shards k mod to:
// each one's count (and commit counters) is added to its target and it is
// deleted, in one commit, if it did not change since it was read. Strong
// reads stay exact throughout. It returns how many shards it merged.
func (b *base) mergeShards(ctx context.Context, id string, to, from int) (int, error) {
	merged := 0
	for lo := to; lo < from; lo += mergeChunk {
		hi := min(lo+mergeChunk, from)
		for attempt := 0; ; attempt++ {
			n, err := b.mergeRange(ctx, id, to, lo, hi)
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

// shardOf decodes a shard (zero when it does not exist).
func shardOf(pd *pb.Document) (shardChange, error) {
	if pd == nil {
		return shardChange{}, nil
	}
	d := docOf(pd)
	c := shardChange{Count: d.integer(fieldCount), Commits: d.integer(fieldCommits), Slow: d.integer(fieldSlow)}
	if err := d.done(); err != nil {
		return c, errs.Wrap(errs.DataLoss, err, "%s is malformed", pd.GetName())
	}
	return c, nil
}

// mergeRange merges shards lo..hi-1 into their targets in one commit. The
// sums are checked: a merge that would pass int64 (shards written outside
// the functions) is DATA_LOSS and changes nothing, where Firestore's
// increment would saturate silently.
func (b *base) mergeRange(ctx context.Context, id string, to, lo, hi int) (int, error) {
	names := make([]string, 0, hi-lo+to)
	for k := lo; k < hi; k++ {
		names = append(names, b.shardName(id, k))
	}
	targetAt := map[int]int{} // target shard -> its index in names
	for k := lo; k < hi; k++ {
		if t := counter.MergeTarget(k, to); targetAt[t] == 0 {
			targetAt[t] = len(names)
			names = append(names, b.shardName(id, t))
		}
	}
	docs, _, err := b.db.getAt(ctx, names, time.Time{})
	if err != nil {
		return 0, err
	}
	var writes []*pb.Write
	targets := map[int]shardChange{}
	values := map[int]int64{} // each target's count after the merge
	for i, d := range docs[:hi-lo] {
		if d == nil {
			continue
		}
		shard, err := shardOf(d)
		if err != nil {
			return 0, err
		}
		t := counter.MergeTarget(lo+i, to)
		if _, ok := targets[t]; !ok {
			target, err := shardOf(docs[targetAt[t]])
			if err != nil {
				return 0, err
			}
			targets[t], values[t] = shardChange{}, target.Count
		}
		v, ok := counter.Add(values[t], shard.Count)
		if !ok {
			return 0, errs.New(errs.DataLoss, "merging shard %d of counter %q into shard %d would pass int64: its shards were written outside the functions", lo+i, id, t)
		}
		values[t] = v
		sum := targets[t]
		sum.Count += shard.Count
		sum.Commits += shard.Commits
		sum.Slow += shard.Slow
		targets[t] = sum
		writes = append(writes, deleteWrite(d.GetName(), d.GetUpdateTime().AsTime()))
	}
	if len(writes) == 0 {
		return 0, nil
	}
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		writes = append(writes, b.shardWrite(id, t, targets[t]))
	}
	if _, err := b.db.commit(ctx, writes...); err != nil {
		return 0, err
	}
	return len(writes) - len(targets), nil
}

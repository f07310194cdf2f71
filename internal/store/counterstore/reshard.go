package counterstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/retry"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// Reshard sets counter id's shard count to n and returns the counter
// before and after. Shrinking records until when shards >= n may still be
// written (mergeFor after its commit lands at the latest: ctx's deadline), and merges what exists now (merged says how
// many); the roll-up, reconcile or the next reshard merges again once no
// instance can still write to them. A counter still merging after a
// shrink refuses another reshard with FAILED_PRECONDITION until
// merge_until; after it, Reshard finishes that merge itself and goes on.
func (s *Store) Reshard(ctx context.Context, id string, n int, mergeFor time.Duration, reason string) (before, after counter.Counter, merged int, err error) {
	var next counter.Counter
	sent := s.base.Now() // no later than the commit: when what it wrote is known from
	c, resp, err := s.Update(ctx, id, false, "reshard", func(c counter.Counter, _ time.Time) ([]*pb.Write, error) {
		if c.Reshard.Merging() {
			if wait := c.Reshard.MergeUntil.Sub(s.base.Now()); wait > 0 {
				return nil, &errs.Error{Code: errs.FailedPrecondition, Field: "num_shards", RetryAfter: wait + time.Second,
					Message: fmt.Sprintf("num_shards cannot change while counter %q merges the shards of its shrink from %d to %d (until about %s)",
						id, c.Reshard.From, c.Reshard.To, c.Reshard.MergeUntil.UTC().Format(time.RFC3339))}
			}
			// No instance can write to the old shards any more: the last
			// merge, then the new shard count (which records it merged).
			if _, err := s.MergeShards(ctx, id, c.Reshard.To, c.Reshard.From); err != nil {
				return nil, err
			}
			c.Reshard.MergedAt = s.base.Now()
		}
		if c.NumShards == n {
			next = c
			return nil, nil
		}
		now := s.base.Now()
		next = c
		next.NumShards = n
		next.Reshard = counter.Reshard{From: c.NumShards, To: n, At: now, Reason: reason}
		if n < c.NumShards {
			next.Reshard.MergeUntil = fs.LandsBy(ctx, now).Add(mergeFor) // the shard count may be read as it was until the commit lands
		} else {
			next.Reshard.MergedAt = now // nothing to merge
		}
		fields := map[string]*pb.Value{dm.FieldNumShards: fs.IntValue(int64(n)), dm.FieldReshard: shared.ReshardValue(next.Reshard)}
		writes := []*pb.Write{fs.UpdateWrite(s.name(dm.Counter(id)), fields, []string{dm.FieldNumShards, dm.FieldReshard}, c.Version)}
		if n < c.NumShards {
			writes = append(writes, s.base.ActivityWrite(id, next.Reshard.MergeUntil)) // reconcile merges then, if nobody writes it
		}
		return writes, nil
	})
	if err != nil {
		return c, c, 0, err
	}
	if resp == nil {
		return next, next, 0, nil // the count it has (a finished merge is recorded by the next reshard or roll-up)
	}
	next.Version = fs.VersionOf(resp, 0)
	s.Remember(next, sent)
	if n < c.NumShards {
		merged, err = s.MergeShards(ctx, id, n, c.NumShards)
		if err != nil {
			logging.FromContext(ctx).Warn("the first merge of a shrink failed; the roll-up or reconcile will finish it", "error", err.Error())
		}
	}
	return c, next, merged, nil
}

// mergeChunk bounds the shards merged in one commit (a delete each, and
// an increment of each target), and what a commit reads first: far below
// the largest request Firestore takes (10 MiB; the emulator's, 4 MiB).
const mergeChunk = 200

// MergeShards moves shards to..from-1 of counter id into shards k mod to:
// each one's count (and commit counters) is added to its target and it is
// deleted, in one commit, if it did not change since it was read. Strong
// reads stay exact throughout. It returns how many shards it merged.
func (s *Store) MergeShards(ctx context.Context, id string, to, from int) (int, error) {
	merged := 0
	for lo := to; lo < from; lo += mergeChunk {
		hi := min(lo+mergeChunk, from)
		err := retry.Raced(fmt.Sprintf("the shards of counter %q", id), func(int) (bool, error) {
			n, err := s.mergeRange(ctx, id, to, lo, hi)
			if fs.Code(err) == codes.FailedPrecondition {
				// A shard was written after it was read (an instance that
				// still caches the old shard count): read them again.
				return true, nil
			}
			merged += n
			return false, fs.Classify(err, "merge the shards of "+id)
		})
		if err != nil {
			return merged, err
		}
	}
	return merged, nil
}

// shardOf decodes a shard (zero when it does not exist).
func shardOf(pd *pb.Document) (shared.ShardChange, error) {
	if pd == nil {
		return shared.ShardChange{}, nil
	}
	d := fs.DocOf(pd)
	c := shared.ShardChange{Count: d.Int(dm.FieldCount), Commits: d.Int(dm.FieldCommits), Slow: d.Int(dm.FieldSlow)}
	counts := d.Map(dm.FieldCounts)
	for _, choice := range counts.Fields() {
		if c.Counts == nil {
			c.Counts = map[string]int64{}
		}
		c.Counts[choice] = counts.Int(choice)
	}
	if err := d.Err(counts); err != nil {
		return c, errs.Wrap(errs.DataLoss, err, "%s is malformed", pd.GetName())
	}
	return c, nil
}

// mergeRange merges shards lo..hi-1 into their targets in one commit. The
// sums are checked: a merge that would pass int64 (shards written outside
// the functions) is DATA_LOSS and changes nothing, where Firestore's
// increment would saturate silently.
func (s *Store) mergeRange(ctx context.Context, id string, to, lo, hi int) (int, error) {
	names := make([]string, 0, hi-lo+to)
	for k := lo; k < hi; k++ {
		names = append(names, s.name(dm.Shard(id, k)))
	}
	targetAt := map[int]int{} // target shard -> its index in names
	for k := lo; k < hi; k++ {
		if t := counter.MergeTarget(k, to); targetAt[t] == 0 {
			targetAt[t] = len(names)
			names = append(names, s.name(dm.Shard(id, t)))
		}
	}
	docs, _, err := s.db.GetAll(ctx, names, time.Time{})
	if err != nil {
		return 0, err
	}
	var writes []*pb.Write
	targets := map[int]shared.ShardChange{}
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
			targets[t], values[t] = shared.ShardChange{}, target.Count
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
		for choice, n := range shard.Counts {
			if sum.Counts == nil {
				sum.Counts = map[string]int64{}
			}
			sum.Counts[choice] += n
		}
		targets[t] = sum
		writes = append(writes, fs.DeleteWrite(d.GetName(), d.GetUpdateTime().AsTime()))
	}
	if len(writes) == 0 {
		return 0, nil
	}
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		writes = append(writes, s.base.ShardWrite(id, t, targets[t]))
	}
	if _, err := s.db.Commit(ctx, writes...); err != nil {
		return 0, err
	}
	return len(writes) - len(targets), nil
}

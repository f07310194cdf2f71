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

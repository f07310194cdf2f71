package incrementstore

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// commitMode is what a counter's mode does in the commits of its
// increments, beside their plan (internal/increment): one implementation
// a mode, chosen once per Apply by modeOf (plain counters in bound.go,
// counters of members in members.go, distinct counters in sketch.go).
// The commit itself (store.go) is the same for every mode.
type commitMode interface {
	// known answers the ops this instance knows change nothing, with no
	// Firestore operation (by op, the shard that holds them), and returns
	// the indexes of the rest.
	known(c counter.Counter, ops []increment.Op) (map[int]int, []int)
	// shard is the shard a batch of ops goes to first.
	shard(c counter.Counter, ops []increment.Op) int
	// read reads what the plan of b's pending ops depends on (the members
	// of its users, of a mode with members), and may refuse ops (the
	// bound).
	read(ctx context.Context, b *increment.Batch) (map[string]increment.Membership, error)
	// unchanged reports whether plan changes nothing: its ops answer with
	// no commit.
	unchanged(plan increment.Plan) bool
	// shardWrites are the writes of change to b's shard: the shard's (nil
	// when it is left as it was), then any other.
	shardWrites(b *increment.Batch, change shared.ShardChange) (*pb.Write, []*pb.Write)
	// lastWrites go last in the commit, before a creation.
	lastWrites(b *increment.Batch) []*pb.Write
	// landed settles b's pending ops with plan, whose commit (resp; nil
	// when none was needed) landed.
	landed(b *increment.Batch, plan increment.Plan, resp *pb.CommitResponse) error
	// raced is told of a lost race, before the commit is tried again.
	raced(b *increment.Batch)
	// recordFields are the fields of a key's record beyond its delta,
	// shard and expiry: what a replay answers on the mode.
	recordFields(r increment.Record) map[string]*pb.Value
}

// modeOf is the commitMode of counter c: the one place increments branch
// on a counter's mode.
func (s *Store) modeOf(c counter.Counter) commitMode {
	switch c.Mode {
	case counter.Distinct:
		return &sketches{s: s}
	case counter.Choice:
		return &choices{members{s: s}}
	case counter.Unique, counter.JoinOnly:
		return &members{s: s}
	}
	return &plain{s: s}
}

// anyShard is the shard of most modes' batches: one at random, which
// spreads a counter's writes over its shards.
func (s *Store) anyShard(c counter.Counter) int { return s.base.IntN(c.ID, c.NumShards) }

// noneKnown: every op commits.
func noneKnown(ops []increment.Op) (map[int]int, []int) {
	rest := make([]int, len(ops))
	for i := range rest {
		rest[i] = i
	}
	return nil, rest
}

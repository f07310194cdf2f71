package rollup

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/logging"
)

var auto = AutoSharding{Enabled: true, Target: 1, Interval: 10 * time.Minute}

// TestAutoShardingSwitchedOnLaterOnlyRecordsABaseline: a counter rolled up
// without automatic sharding has no activity baseline. Its first roll-up
// with it used to divide every commit the shards ever took by the time
// since the last roll-up (20,000 past commits and one new one read as
// thousands per second) and grow it to 1,000 shards.
func TestAutoShardingSwitchedOnLaterOnlyRecordsABaseline(t *testing.T) {
	r := New(nil, Options{Cadence: time.Second, AutoSharding: auto})
	ctx := logging.NewContext(context.Background(), quiet)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := counter.Counter{ID: "c", NumShards: 10, AsOf: t0} // rolled up with AUTO_SHARDING=off
	sums := counter.Sums{Count: 20_001, Commits: 20_001, Slow: 20_001}
	next, grew := r.next(ctx, prev, sums, t0.Add(15*time.Second))
	if grew || next.NumShards != 10 || next.WriteRate != 0 || !next.ActivityAsOf.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("first roll-up with automatic sharding: grew %v to %d, rate %.1f, baseline %s; want a baseline only",
			grew, next.NumShards, next.WriteRate, next.ActivityAsOf)
	}
	// From the baseline on, the rate is what happens since: 300 commits in
	// 10 s is 30/s over 10 shards, 3 per shard, over the target.
	sums.Commits += 300
	later, grew := r.next(ctx, next, sums, next.ActivityAsOf.Add(10*time.Second))
	if !grew || later.NumShards <= 10 || later.WriteRate <= 0 {
		t.Fatalf("a hot counter after its baseline: grew %v to %d at %.1f/s", grew, later.NumShards, later.WriteRate)
	}
	// Without automatic sharding no baseline is kept, so switching it on
	// later starts afresh.
	off := New(nil, Options{Cadence: time.Second})
	plain, _ := off.next(ctx, later, sums, later.AsOf.Add(time.Second))
	if !plain.ActivityAsOf.IsZero() || plain.WriteRate != 0 {
		t.Fatalf("without automatic sharding: baseline %s, rate %.1f kept", plain.ActivityAsOf, plain.WriteRate)
	}
}

// TestAutoShardingKeepsAnEndUsersCounterWithinUserMaxShards: the roll-up
// grew any hot counter to 1,000 shards, an end user's too; USER_MAX_SHARDS
// holds on every path that sets shards.
func TestAutoShardingKeepsAnEndUsersCounterWithinUserMaxShards(t *testing.T) {
	capped := auto
	capped.UserMaxShards = 20
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		origin counter.Origin
		owner  string
		want   int
	}{
		{counter.ByUser, "mallory", 20},
		{"", "mallory", 20}, // stored before origins were: an owner means an end user
		{counter.ByAdmin, "", 150},
		{counter.ByKind, "", 150},
	} {
		prev := counter.Counter{ID: "c", NumShards: 10, AsOf: t0, ActivityAsOf: t0, WriteRate: 100, Origin: tc.origin, Owner: tc.owner}
		next := prev
		next.WriteRate, next.AsOf = 100, t0.Add(time.Minute) // 10 per shard, ten times the target
		if n, _ := capped.decide(prev, next); n != tc.want {
			t.Errorf("origin %q: grown to %d shards, want %d", tc.origin, n, tc.want)
		}
	}
}

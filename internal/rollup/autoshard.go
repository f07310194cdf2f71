package rollup

import (
	"fmt"
	"math"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
)

// AutoSharding grows counters whose shards run hot (AUTO_SHARDING).
//
// The roll-up sees every counter's sums at each roll-up: the shard commits
// (their rate, smoothed over rateHalfLife) and the commits that followed a
// slow or refused one (contention, measured by the increments). A counter
// grows when either says its shards take more than they can.
type AutoSharding struct {
	Enabled bool
	// Target is the sustained commits per second one shard should take
	// (production Firestore: about 1 per document).
	Target float64
	// Interval is the least time between two growths of a counter.
	Interval time.Duration
	// UserMaxShards caps a counter an end user created (USER_MAX_SHARDS).
	UserMaxShards int
	// Kinds say which kinds' counters may grow (a kind's auto_sharding):
	// the roller's (Options.Kinds).
	Kinds counter.Kinds
}

// Contention: at least minSlow commits in a roll-up window, making up at
// least a quarter of them, followed a slow or refused commit.
const (
	minSlow       = 5
	slowShareDiv  = 4
	rateHeadroom  = 1.5 // grow to this many times the shards the rate needs
	contendedGrow = 2   // grow by this factor on contention alone
)

// decide returns the shard count c should have given its next roll-up, and
// why it changes (empty when it does not).
func (a AutoSharding) decide(c, next counter.Counter) (int, string) {
	n, most := c.NumShards, c.MaxShardsFor(a.UserMaxShards)
	kind, ofKind := a.Kinds[c.Kind]
	switch {
	case !a.Enabled || n >= most || c.Reshard.Merging() || ofKind && !kind.Grows() || c.Mode.Reshards(c.ID) != nil:
		return n, ""
	case !c.Reshard.At.IsZero() && next.AsOf.Sub(c.Reshard.At) < a.Interval:
		return n, ""
	case c.ActivityAsOf.IsZero():
		return n, "" // the first roll-up that sums the activity only records a baseline
	}
	perShard := next.WriteRate / float64(n)
	if perShard > a.Target {
		want := int(math.Ceil(next.WriteRate / a.Target * rateHeadroom))
		return min(most, max(want, n+1)),
			fmt.Sprintf("auto: %.1f commits/s per shard over the target %.1f", perShard, a.Target)
	}
	slow, commits := next.Sums.Slow-c.Sums.Slow, next.Sums.Commits-c.Sums.Commits
	if slow >= minSlow && slow*slowShareDiv >= commits {
		return min(most, n*contendedGrow),
			fmt.Sprintf("auto: %d of %d commits followed a slow or refused one", slow, commits)
	}
	return n, ""
}

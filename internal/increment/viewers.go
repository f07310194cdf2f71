package increment

import (
	"strconv"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/distinct"
)

// The rules of a distinct counter's commits beyond its plan: which shard a
// batch goes to, and which viewers an instance may answer without a
// commit. Any shard takes any member, and a sketch never forgets one, so
// both only save work: neither changes a count.

// HomeShard is the shard of counter c a batch of ops goes to first when
// they are all one member's: that member's own, by hash, so that a viewer
// who comes back alone finds themselves in the sketches read and writes
// nothing. A batch of several members goes to a shard at random (false),
// so that no member's shard takes more than its share.
func HomeShard(c counter.Counter, ops []Op) (int, bool) {
	for _, op := range ops[1:] {
		if op.User != ops[0].User {
			return 0, false
		}
	}
	return int(distinct.Hash(ops[0].User) % uint64(c.NumShards)), true
}

// ViewerKey names member in the sketches of counter c's incarnation and of
// its buckets starting at starts (the current hour and day, with windows
// on): what an instance remembers of a viewer it added to, or found in,
// a shard's sketches. "" for a counter whose creation is not known yet:
// its key would outlive it.
func ViewerKey(c counter.Counter, starts []time.Time, member string) string {
	if c.CreatedAt.IsZero() || c.Version.IsZero() {
		return ""
	}
	key := c.Incarnation() + "|" + strconv.FormatUint(distinct.Hash(member), 36)
	for _, t := range starts {
		key += "|" + strconv.FormatInt(t.Unix(), 36)
	}
	return key
}

// KnownViewers splits the ops of distinct counter c into those by viewers
// known (by remembered: the shard whose sketches of c and of the buckets
// at starts hold them, found by ViewerKey), answered with no Firestore
// operation at all, and the rest (their indexes). An op with a key, or
// authorized on another incarnation, is never known.
func KnownViewers(c counter.Counter, ops []Op, starts []time.Time, remembered func(key string) (int, bool)) (known map[int]int, rest []int) {
	for i, op := range ops {
		if op.Key == "" && op.Delta == 1 && SameIncarnation(op.Counter, c) {
			if k, ok := remembered(ViewerKey(c, starts, op.User)); ok {
				if known == nil {
					known = map[int]int{}
				}
				known[i] = k
				continue
			}
		}
		rest = append(rest, i)
	}
	return known, rest
}

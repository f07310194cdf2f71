package rollup

import (
	"context"
	"math"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/logging"
)

// write is the one write path of the roll-up and of Reconcile: the
// roll-up of c from the sums read at readTime, its change since c's for
// the time windows, a finished merge, and correct added to a shard (a
// unique counter's audit, with a choice counter's counts), in one commit. It reports whether the document
// was still c.
func (r *Roller) write(ctx context.Context, c counter.Counter, sums counter.Sums, readTime time.Time, merged bool, correct counter.Sums) (bool, error) {
	next, grew := r.next(ctx, c, sums, readTime)
	change := next.Count - c.Count
	var since time.Time
	if c.Mode.Estimates() { // a change of an estimate counts nobody in a window: its buckets are set to theirs
		change, since = 0, c.AsOf
		if since.Before(c.CreatedAt) {
			since = c.CreatedAt // never rolled up: a first use's counter says the epoch
		}
	}
	ru := counter.Rollup{Next: next, Change: change, Changes: changes(c.Counts, next.Counts), EstimateSince: since,
		Reshard: grew || merged, Correct: correct.Count, CorrectCounts: correct.Counts}
	if c.Kind != "" { // the mirror of a kind's counter, in the app's document
		ru.MirrorPath, ru.MirrorField, _ = r.kinds[c.Kind].MirrorOf(c.ID)
	}
	_, ok, err := r.store.WriteRollup(ctx, ru)
	if ok {
		writes.Add(ctx, 1)
		r.learn(c.ID, knowledge{asOf: readTime})
	}
	return ok, err
}

// next is the roll-up of c from sums read at readTime: the total, the
// write-rate estimate and, with automatic sharding, maybe more shards.
func (r *Roller) next(ctx context.Context, c counter.Counter, sums counter.Sums, readTime time.Time) (counter.Counter, bool) {
	next := c
	next.Count, next.Counts, next.Sums, next.AsOf = sums.Count, sums.Counts, sums, readTime
	next.WriteRate, next.ActivityAsOf = 0, time.Time{}
	if !r.auto.Enabled {
		return next, false
	}
	next.WriteRate, next.ActivityAsOf = writeRate(c, sums, readTime), readTime
	n, reason := r.auto.decide(c, next)
	if n == c.NumShards {
		return next, false
	}
	logging.FromContext(ctx).Warn("automatic sharding grows a counter", "from", c.NumShards, "to", n, "reason", reason,
		"write_rate", next.WriteRate, "per_shard", next.WriteRate/float64(c.NumShards), "target_per_shard", r.auto.Target,
		"commits", sums.Commits-c.Sums.Commits, "slow_commits", sums.Slow-c.Sums.Slow, "window_s", readTime.Sub(c.AsOf).Seconds())
	next.NumShards = n
	next.Reshard = counter.Reshard{From: c.NumShards, To: n, At: readTime, MergedAt: readTime, Reason: reason}
	return next, true
}

// sum reads counter c's total (and counts) at a read time, and with
// automatic sharding its shards' activity (one more aggregation).
func (r *Roller) sum(ctx context.Context, c counter.Counter) (counter.Sums, time.Time, error) {
	sums, readTime, err := r.store.Sums(ctx, c, time.Time{})
	if err != nil || !r.auto.Enabled {
		return sums, readTime, err
	}
	sums.Commits, sums.Slow, err = r.store.Activity(ctx, c.ID)
	return sums, readTime, err
}

// changes are a choice counter's changes by choice from before to after
// (nil for other counters, or when none changed).
func changes(before, after map[string]int64) map[string]int64 {
	var out map[string]int64
	for choice, n := range after {
		if d := n - before[choice]; d != 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[choice] = d
		}
	}
	return out
}

// rateHalfLife smooths the write rate: a burst shorter than this barely
// moves it, a load sustained for a few of them does.
const rateHalfLife = 10 * time.Second

// writeRate updates the estimate of shard commits per second with the
// commits since the last roll-up that summed them (an exponential moving
// average over time). Without one (automatic sharding was off, or is new)
// there is no baseline: the rate stays, and this roll-up records one.
func writeRate(prev counter.Counter, sums counter.Sums, readTime time.Time) float64 {
	dt := readTime.Sub(prev.ActivityAsOf)
	if dt <= 0 || prev.ActivityAsOf.IsZero() {
		return prev.WriteRate
	}
	now := float64(sums.Commits-prev.Sums.Commits) / dt.Seconds()
	keep := math.Exp2(-dt.Seconds() / rateHalfLife.Seconds())
	return keep*prev.WriteRate + (1-keep)*now
}

// finishMerge runs the last merge of a shrink once no instance can still
// write to the old shards, and records it on c.
func (r *Roller) finishMerge(ctx context.Context, c *counter.Counter) (bool, error) {
	if !c.Reshard.Merging() || r.clock.Now().Before(c.Reshard.MergeUntil) {
		return false, nil
	}
	n, err := r.store.MergeShards(ctx, c.ID, c.Reshard.To, c.Reshard.From)
	if err != nil {
		return false, err
	}
	c.Reshard.MergedAt = r.clock.Now()
	logging.FromContext(ctx).Info("shrink merged", "from", c.Reshard.From, "to", c.Reshard.To, "shards_merged_last", n)
	return true, nil
}

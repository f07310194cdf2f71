package rollup

import (
	"context"
	"fmt"
	"time"

	"github.com/shardcount/shardcount/internal/activity"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/retry"
)

// Outcome is what Reconcile did to one counter.
type Outcome struct {
	// Corrected is true when the stored total was stale.
	Corrected bool
	// Drift, on a unique counter, is its member count minus the sum of
	// its shards before the audit corrected the shards (0: they agreed).
	Drift int64
	// Checked is true when the counter was reconciled, Purged when it was
	// deleted and is now gone for good (Heal).
	Checked, Purged bool
	// Again, when not zero, is when it has more to do: a purge to finish,
	// a shrink's merge after its merge_until.
	Again time.Time
	// Behind is, when Corrected, how far the stored roll-up was behind
	// the sum: long past a cadence, an event was lost; shortly, the
	// roll-up was merely under way.
	Behind time.Duration
}

// Heal is reconcile's work on one counter: Reconcile a live one, or go on
// purging a deleted one (deleted says the sweep saw it deleted, so it is
// not read as a live counter first). A counter gone meanwhile is
// NOT_FOUND.
func (r *Roller) Heal(ctx context.Context, id string, deleted bool) (Outcome, error) {
	if !deleted {
		o, err := r.Reconcile(ctx, id)
		if !errs.Is(err, errs.NotFound) {
			return o, err
		}
	}
	gone, err := r.store.Purge(ctx, id)
	o := Outcome{Purged: gone}
	if err == nil && !gone {
		o.Again = r.clock.Now() // deleted, not all purged yet (or not past purge_after)
	}
	return o, err
}

// Reconcile recomputes a counter's total and writes it if the stored one
// differs, whatever the cadence: it heals a roll-up whose last event was
// lost, finishes a shrink's merge on a counter nobody writes to, and
// writes the fields an earlier version's document lacks (Legacy). On a
// unique counter it also audits the shards against the members, counted
// at the same read time: the member count is the truth, and a difference
// is corrected on the shards in the same commit, and logged.
func (r *Roller) Reconcile(ctx context.Context, id string) (Outcome, error) {
	log := logging.FromContext(ctx)
	var out Outcome
	unnamed := false
	err := retry.Raced(fmt.Sprintf("counter %q", id), func(int) (bool, error) {
		c, err := r.store.Live(ctx, id)
		if err != nil {
			return false, err
		}
		merged, err := r.finishMerge(ctx, &c)
		if err != nil {
			return false, err
		}
		sums, readTime, err := r.sum(ctx, c)
		if err != nil {
			return false, err
		}
		var correct counter.Sums // the audit's, of a unique counter
		if c.Mode.Members() {
			unnamed = !c.MemberKinds
			members, err := r.store.Audit(ctx, c, readTime)
			if err != nil {
				return false, err
			}
			correct = counter.Sums{Count: members.Count - sums.Count, Counts: changes(sums.Counts, members.Counts)}
			sums.Count, sums.Counts = members.Count, members.Counts
		}
		drift := correct.Count
		var again time.Time
		if c.Reshard.Merging() && !merged {
			again = c.Reshard.MergeUntil // the merge is due then
		}
		lost := sums.Written.After(c.AsOf) // a write whose roll-up never came, though it changed no sum
		if sums.Count == c.Count && changes(c.Counts, sums.Counts) == nil && !merged && correct.Count == 0 && correct.Counts == nil && !c.Legacy && !lost {
			out = Outcome{Checked: true, Again: again}
			return false, nil
		}
		ok, err := r.write(ctx, c, sums, readTime, merged, correct)
		if err != nil || !ok {
			return !ok && err == nil, err // raced: the document changed since it was read
		}
		if drift != 0 || correct.Counts != nil {
			mismatches.Add(ctx, 1)
			log.Error("audit: a unique counter's shards differed from its members; corrected to the member count",
				"members", sums.Count, "shards", sums.Count-drift, "drift", drift, "choice_drift", correct.Counts)
		}
		if sums.Count != c.Count {
			log.Warn("reconciled a stale roll-up", "count", sums.Count,
				"previous_count", c.Count, "previous_as_of", c.AsOf, "merged", merged)
		}
		out = Outcome{Checked: true, Corrected: sums.Count != c.Count || changes(c.Counts, sums.Counts) != nil, Drift: drift, Again: again, Behind: readTime.Sub(c.AsOf)}
		return false, nil
	})
	if err == nil && unnamed && !r.nameMemberKinds(ctx, id) {
		out.Again = r.clock.Now() // more to name: the next scheduled run comes back
	}
	return out, err
}

// nameMemberKinds gives a page of the member documents of counter id,
// written before they named their kind (or, the first versions', their
// uid and counter), what they lack: each scheduled run or
// audit of the counter a page, until all do (it reports whether they
// do). What fails is logged and left to the next.
func (r *Roller) nameMemberKinds(ctx context.Context, id string) bool {
	c, err := r.store.Live(ctx, id) // the version the roll-up just wrote
	done := false
	if err == nil {
		done, err = r.store.NameMemberKinds(ctx, c, memberKindsPage)
	}
	if err != nil {
		logging.FromContext(ctx).Warn("could not name the kind of members written before they carried it; the next run goes on", "error", err.Error())
	}
	return done
}

// memberKindsPage is how many member documents one reconcile of a counter
// names.
const memberKindsPage = 300

// SweepEntry is a counter the reconcile sweep visits.
type SweepEntry struct {
	ID string
	// Deleted counters are purged, not reconciled.
	Deleted bool
}

// Cursor is where reconcile stands: the scheduled runs in the
// activity index (Active), the full audit in the counters' ids.
type Cursor struct {
	Active activity.Cursor
	// ActiveConfig is the settings that decide which markers a run reads
	// (see internal/reconcile) as of the last scheduled run.
	ActiveConfig string
	// ActiveShards is the most shard values markers were ever written on
	// (ACTIVITY_SHARDS at its highest): runs read all of them, so lowering
	// the setting strands no marker.
	ActiveShards int
	After        string    // full audit: last counter id checked; "" at the start of a pass
	PassStarted  time.Time // when the current pass began
	Passes       int64     // completed passes
}

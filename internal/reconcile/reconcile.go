// Package reconcile is the roll-up's side of the counters' functions:
// rollupCounter's events, each included in a roll-up (internal/rollup),
// and reconcileCounters' runs, which heal what a lost event left behind,
// finish shrinks and purges, and audit every counter on request. Like
// internal/core, it knows neither HTTP nor Firestore: it works over Store.
package reconcile

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"golang.org/x/sync/errgroup"

	"github.com/shardcount/shardcount/internal/activity"
	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/rollup"
)

// ReconcileRequest is the input of reconcileCounters: one counter; the
// full audit of every counter with full; else, the scheduled run over the
// counters active since the last one.
type ReconcileRequest struct {
	CounterID *string `json:"counter_id"`
	Full      *bool   `json:"full"`
}

// ReconcileResponse counts the counters checked, those whose roll-up was
// stale and got corrected, those that failed (the next run visits them
// again), those with more to do later (again), the unique counters whose
// shards differed from their members (corrected to the member count;
// Drift sums the differences), and the deleted counters purged for good.
// PassComplete is true when the run covered everything it had to: every
// counter active up to Since (scheduled), or every counter (full).
type ReconcileResponse struct {
	Mode         string `json:"mode"` // "active", "full" or "one"
	Checked      int    `json:"checked"`
	Corrected    int    `json:"corrected"`
	Failed       int    `json:"failed"`
	Again        int    `json:"again,omitempty"`
	Audited      int    `json:"audit_corrected"`
	Drift        int64  `json:"audit_drift"`
	Purged       int    `json:"purged"`
	PassComplete bool   `json:"pass_complete"`
	Since        string `json:"since,omitempty"`  // scheduled: every counter active up to this time was visited
	Cursor       string `json:"cursor,omitempty"` // full: the last counter id checked
}

// add counts one counter's outcome.
func (r *ReconcileResponse) add(o rollup.Outcome) {
	if o.Purged {
		r.Purged++
	}
	if !o.Checked {
		return
	}
	r.Checked++
	if o.Corrected {
		r.Corrected++
	}
	if o.Drift != 0 {
		r.Audited++
		r.Drift += o.Drift
	}
}

// Reconcile sizes: markers or counters read per page, and visited at once.
const (
	sweepPage        = 300
	sweepConcurrency = 16
)

// Store is what the roll-up and reconcile read and write.
type Store interface {
	rollup.Store
	activity.Source
	// MarkersOn is Markers on the first shards shard values.
	MarkersOn(ctx context.Context, shards int, after activity.Cursor, until time.Time, limit int) ([]activity.Marker, bool, error)
	LoadReconcileCursor(ctx context.Context) (rollup.Cursor, error)
	// SaveActiveCursor saves the scheduled runs' part of the cursor,
	// SaveFullCursor the full audit's.
	SaveActiveCursor(ctx context.Context, c rollup.Cursor) error
	SaveFullCursor(ctx context.Context, c rollup.Cursor) error
	// SweepPage lists counters after an id, deleted ones included.
	SweepPage(ctx context.Context, after string, limit int) ([]rollup.SweepEntry, error)
}

// Reconciler runs the roll-up and reconcile of one instance.
type Reconciler struct {
	cfg    config.Config
	store  Store
	roller *rollup.Roller
	now    func() time.Time
}

// New returns the reconciler of cfg over store, on the instance's clock
// now (nil: time.Now).
func New(cfg config.Config, store Store, now func() time.Time) *Reconciler {
	if now == nil {
		now = time.Now
	}
	return &Reconciler{cfg: cfg, store: store, now: now, roller: rollup.New(store, rollup.Options{Cadence: cfg.RollupCadence, Kinds: cfg.Kinds, Now: now,
		AutoSharding: rollup.AutoSharding{Enabled: cfg.AutoSharding, Target: cfg.AutoShardingTarget, Interval: cfg.AutoShardingInterval, UserMaxShards: cfg.UserMaxShards}})}
}

// Include returns once counter e.CounterID's roll-up includes the shard
// write of event e (rollupCounter), within ROLLUP_WORK.
func (a *Reconciler) Include(ctx context.Context, e rollup.Event) error {
	// A slot's holder sleeps up to a cadence, then makes a few calls.
	ctx, cancel := context.WithTimeout(ledger.WithLabel(ctx, "rollup"), a.cfg.RollupWork())
	defer cancel()
	return a.roller.Include(ctx, e)
}

// Reconcile heals roll-ups whose last event was lost, finishes shrinks on
// quiet counters and purges deleted ones (reconcileCounters); Cloud
// Scheduler calls it (docs/design/rollup.md). Without counter_id it works
// for RECONCILE_BUDGET and saves where it stopped (in Firestore) for the
// next run.
func (a *Reconciler) Reconcile(ctx context.Context, body ReconcileRequest) (ReconcileResponse, error) {
	ctx = ledger.WithLabel(ctx, "reconcile")
	switch {
	case body.CounterID != nil:
		if err := counter.ValidateID(*body.CounterID); err != nil {
			return ReconcileResponse{}, err
		}
		logging.Annotate(ctx, "counter_id", *body.CounterID)
		resp := ReconcileResponse{Mode: "one"}
		if err := a.reconcileOne(ctx, rollup.SweepEntry{ID: *body.CounterID}, &resp); err != nil {
			return ReconcileResponse{}, err
		}
		return resp, nil
	case body.Full != nil && *body.Full:
		return a.sweep(ctx)
	}
	return a.reconcileActive(ctx)
}

// reconcileOne reconciles a counter, or purges a deleted one, and counts
// what it did in resp. What is left for later (a purge before purge_after,
// a merge before merge_until) is marked in the activity index, for the
// scheduled run to finish.
func (a *Reconciler) reconcileOne(ctx context.Context, e rollup.SweepEntry, resp *ReconcileResponse) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	o, err := a.roller.Heal(ctx, e.ID, e.Deleted)
	if err != nil {
		return err
	}
	resp.add(o)
	a.countCorrection(ctx, o)
	if !o.Again.IsZero() {
		return a.store.Mark(ctx, e.ID, o.Again)
	}
	return nil
}

// call bounds one Firestore call of a long-running function.
func (a *Reconciler) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.cfg.FirestoreDeadline)
}

// reconcileActive is the scheduled run: the counters the activity index
// marked since the last run (internal/activity), and only those. The
// cursor is saved after every page.
func (a *Reconciler) reconcileActive(ctx context.Context) (ReconcileResponse, error) {
	cctx, cancel := a.call(ctx)
	cur, err := a.store.LoadReconcileCursor(cctx)
	cancel()
	if err != nil {
		return ReconcileResponse{}, err
	}
	// Markers written under other settings may lie where the last runs
	// did not look (other shard values, a longer settling time): start
	// over, visiting every marker once.
	if config := a.activityConfig(); cur.ActiveConfig != config {
		// A cursor from before active_shards was kept says the setting
		// it ran with in its config.
		var was int
		if _, err := fmt.Sscanf(cur.ActiveConfig, "shards=%d", &was); err == nil {
			cur.ActiveShards = max(cur.ActiveShards, was)
		}
		if cur.ActiveConfig != "" {
			logging.FromContext(ctx).Warn("the activity index's settings changed: the scheduled runs visit every marker once",
				"was", cur.ActiveConfig, "now", config)
		}
		cur.Active, cur.ActiveConfig = activity.Cursor{}, config
	}
	// Markers may lie on every shard value ACTIVITY_SHARDS ever allowed:
	// a lowered setting leaves those above it, which the runs read too.
	cur.ActiveShards = max(cur.ActiveShards, a.cfg.ActivityShards)
	now := a.now()
	resp := ReconcileResponse{Mode: "active"}
	var mu sync.Mutex
	run := activity.Run{Source: boundedSource{a, cur.ActiveShards}, Page: sweepPage, Concurrency: sweepConcurrency, Now: a.now,
		Heal: func(ctx context.Context, id string) (time.Time, error) {
			ctx, cancel := a.call(ctx)
			defer cancel()
			o, err := a.roller.Heal(ctx, id, false)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errs.Is(err, errs.NotFound):
				return time.Time{}, nil // gone: nothing to do
			case err != nil:
				resp.Failed++
				logging.FromContext(ctx).Warn("reconcile failed; the next run visits it again", "counter_id", id, "error", err.Error())
				return time.Time{}, err
			}
			resp.add(o)
			a.countCorrection(ctx, o)
			return o.Again, nil
		},
		Save: func(ctx context.Context, c activity.Cursor) error {
			cur.Active = c
			ctx, cancel := a.call(ctx)
			defer cancel()
			return a.store.SaveActiveCursor(ctx, cur)
		}}
	until := now.Add(-a.cfg.ReconcileSettle())
	res, err := run.Do(ctx, cur.Active, until, now.Add(a.cfg.ReconcileBudget))
	if err != nil {
		return ReconcileResponse{}, err
	}
	if res.Complete && cur.Active == (activity.Cursor{}) {
		// Nothing marked yet: record the settings all the same.
		cctx, cancel = a.call(ctx)
		err = a.store.SaveActiveCursor(cctx, cur)
		cancel()
		if err != nil {
			return ReconcileResponse{}, err
		}
	}
	resp.Again, resp.PassComplete = res.Again, res.Complete
	if res.Complete {
		resp.Since = until.UTC().Format(time.RFC3339Nano)
	}
	logging.FromContext(ctx).Info("reconcile run", "checked", resp.Checked, "corrected", resp.Corrected, "failed", resp.Failed,
		"again", resp.Again, "audit_corrected", resp.Audited, "audit_drift", resp.Drift, "purged", resp.Purged,
		"pass_complete", resp.PassComplete, "visited", res.Visited, "unmarked", res.Failed)
	return resp, nil
}

// activityConfig is what decides which markers a scheduled run reads: the
// shard values writers spread them over, and how long they settle.
func (a *Reconciler) activityConfig() string {
	return fmt.Sprintf("shards=%d settle=%s", a.cfg.ActivityShards, a.cfg.ReconcileSettle())
}

// boundedSource is the activity index, read on its first shards values,
// with each call bounded by FIRESTORE_DEADLINE.
type boundedSource struct {
	a      *Reconciler
	shards int
}

func (b boundedSource) Markers(ctx context.Context, after activity.Cursor, until time.Time, limit int) ([]activity.Marker, bool, error) {
	ctx, cancel := b.a.call(ctx)
	defer cancel()
	return b.a.store.MarkersOn(ctx, b.shards, after, until, limit)
}

func (b boundedSource) Mark(ctx context.Context, id string, at time.Time) error {
	ctx, cancel := b.a.call(ctx)
	defer cancel()
	return b.a.store.Mark(ctx, id, at)
}

// sweep is the full audit ({"full": true}): every counter, in id order,
// from where the last full run stopped.
func (a *Reconciler) sweep(ctx context.Context) (ReconcileResponse, error) {
	stop := a.now().Add(a.cfg.ReconcileBudget)
	cctx, cancel := a.call(ctx)
	cur, err := a.store.LoadReconcileCursor(cctx)
	cancel()
	if err != nil {
		return ReconcileResponse{}, err
	}
	if cur.After == "" {
		cur.PassStarted = a.now()
	}
	resp := ReconcileResponse{Mode: "full"}
	for a.now().Before(stop) {
		cctx, cancel := a.call(ctx)
		page, err := a.store.SweepPage(cctx, cur.After, sweepPage)
		cancel()
		if err != nil {
			return ReconcileResponse{}, err
		}
		var mu sync.Mutex
		var g errgroup.Group
		g.SetLimit(sweepConcurrency)
		unmarked := false
		for _, e := range page {
			g.Go(func() error {
				var one ReconcileResponse
				err := a.reconcileOne(ctx, e, &one)
				if errs.Is(err, errs.NotFound) {
					return nil // gone meanwhile
				}
				var markErr error
				if err != nil {
					// The pass goes on past it: the scheduled runs visit
					// it from now on, until it heals.
					markErr = boundedSource{a: a}.Mark(ctx, e.ID, a.now())
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					resp.Failed++
					unmarked = unmarked || markErr != nil
					logging.FromContext(ctx).Warn("reconcile failed; the scheduled runs visit it again", "counter_id", e.ID, "error", err.Error())
					return nil // counted: the pass goes on
				}
				resp.Checked += one.Checked
				resp.Corrected += one.Corrected
				resp.Audited += one.Audited
				resp.Drift += one.Drift
				resp.Purged += one.Purged
				return nil
			})
		}
		_ = g.Wait()
		if unmarked {
			break // neither healed nor marked: the next call starts this page again
		}
		if len(page) < sweepPage {
			cur.After, cur.Passes = "", cur.Passes+1
			resp.PassComplete = true
		} else {
			cur.After = page[len(page)-1].ID
		}
		cctx, cancel = a.call(ctx)
		err = a.store.SaveFullCursor(cctx, cur)
		cancel()
		if err != nil {
			return ReconcileResponse{}, err
		}
		if resp.PassComplete {
			break
		}
	}
	resp.Cursor = cur.After
	logging.FromContext(ctx).Info("reconcile full audit", "checked", resp.Checked, "corrected", resp.Corrected,
		"failed", resp.Failed, "audit_corrected", resp.Audited, "audit_drift", resp.Drift, "purged", resp.Purged,
		"pass_complete", resp.PassComplete, "cursor", cur.After, "passes", cur.Passes)
	return resp, nil
}

// corrections counts what the exactness alarm watches (a no-op until a
// provider is set).
var corrections, _ = otel.Meter("github.com/shardcount/shardcount/internal/reconcile").Int64Counter("shardcount.reconcile.corrections",
	metric.WithUnit("{counter}"),
	metric.WithDescription("Counters whose stored total reconcile found stale, its roll-up more than the scheduled run's settling time behind: a lost last event. Should be 0"))

// countCorrection counts a reconcile's correction of a roll-up far
// behind: one merely under way (a by-id or full run just after writes) is
// no alarm.
func (a *Reconciler) countCorrection(ctx context.Context, o rollup.Outcome) {
	if o.Corrected && o.Behind > a.cfg.ReconcileSettle() {
		corrections.Add(ctx, 1)
	}
}

package service

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/rollup"
)

// rollupCounter receives the Firestore event of a shard write and returns
// once the counter's roll-up will include it (internal/rollup). An event it
// cannot use is an INVALID_ARGUMENT error (answered 4xx, not retried by the
// local bridge); UNAVAILABLE asks Eventarc to deliver it again.
func (a *app) rollupCounter(ctx context.Context, e event.Event) error {
	a.rollupEvents.Add(1)
	ev, err := fsevent.Decode(e.DataContentType(), e.Data())
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "the event's data is not a Firestore DocumentEventData: %v", err)
	}
	id, ok := shardCounterID(ev.Path())
	if !ok {
		return errs.New(errs.InvalidArgument, "the event is about %q, not a shard of a counter", ev.Name())
	}
	logging.Annotate(ctx, "counter_id", id)
	// A slot's holder sleeps up to a cadence, then makes a few calls.
	ctx, cancel := context.WithTimeout(firestoredb.WithLabel(ctx, "rollup"), a.cfg.RollupWork())
	defer cancel()
	return a.roller.Include(ctx, rollup.Event{ID: e.ID(), CounterID: id, WrittenAt: ev.WrittenAt(e.Time()), Deleted: ev.Deleted()})
}

// shardCounterID returns {counterId} of "counters/{counterId}/shards/{n}".
func shardCounterID(path string) (string, bool) {
	p := strings.Split(path, "/")
	if len(p) != 4 || p[0] != firestoredb.CountersCollection || p[2] != firestoredb.ShardsCollection || counter.ValidateID(p[1]) != nil {
		return "", false
	}
	return p[1], true
}

// ReconcileRequest is the input of reconcileCounters: one counter, or the
// next stretch of the sweep over every counter when counter_id is absent.
type ReconcileRequest struct {
	CounterID *string `json:"counter_id"`
}

// ReconcileResponse counts the counters checked, those whose roll-up was
// stale and got corrected, those that failed (checked again next pass),
// the unique counters whose shards differed from their members (corrected
// to the member count; Drift sums the differences), and the deleted
// counters purged for good. PassComplete is true when this run reached
// the last counter.
type ReconcileResponse struct {
	Checked      int    `json:"checked"`
	Corrected    int    `json:"corrected"`
	Failed       int    `json:"failed"`
	Audited      int    `json:"audit_corrected"`
	Drift        int64  `json:"audit_drift"`
	Purged       int    `json:"purged"`
	PassComplete bool   `json:"pass_complete"`
	Cursor       string `json:"cursor,omitempty"`
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

// Sweep sizes: counters listed per page, and reconciled at once.
const (
	sweepPage        = 300
	sweepConcurrency = 16
)

// reconcileCounters heals roll-ups whose last event was lost and finishes
// shrinks on quiet counters; Cloud Scheduler calls it (README "Roll-up").
// Without counter_id it resumes the sweep where the last run stopped (a
// cursor in Firestore) and works for RECONCILE_BUDGET.
func (a *app) reconcileCounters(ctx context.Context, req *httpapi.Request) (int, any, error) {
	ctx = firestoredb.WithLabel(ctx, "reconcile")
	var body ReconcileRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	if body.CounterID != nil {
		if err := counter.ValidateID(*body.CounterID); err != nil {
			return 0, nil, err
		}
		logging.Annotate(ctx, "counter_id", *body.CounterID)
		var resp ReconcileResponse
		if err := a.reconcileOne(ctx, firestoredb.SweepEntry{ID: *body.CounterID}, &resp); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, resp, nil
	}
	return a.sweep(ctx)
}

// reconcileOne reconciles a counter, or purges a deleted one, and counts
// what it did in resp; a counter deleted meanwhile is skipped.
func (a *app) reconcileOne(ctx context.Context, e firestoredb.SweepEntry, resp *ReconcileResponse) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	o, err := a.roller.Heal(ctx, e.ID, e.Deleted)
	if err == nil {
		resp.add(o)
	}
	return err
}

// call bounds one Firestore call of a long-running function.
func (a *app) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.cfg.FirestoreDeadline)
}

func (a *app) sweep(ctx context.Context) (int, any, error) {
	stop := time.Now().Add(a.cfg.ReconcileBudget)
	cctx, cancel := a.call(ctx)
	cur, err := a.store.Rollups.LoadReconcileCursor(cctx)
	cancel()
	if err != nil {
		return 0, nil, err
	}
	if cur.After == "" {
		cur.PassStarted = time.Now()
	}
	var resp ReconcileResponse
	for time.Now().Before(stop) {
		cctx, cancel := a.call(ctx)
		page, err := a.store.Rollups.SweepPage(cctx, cur.After, sweepPage)
		cancel()
		if err != nil {
			return 0, nil, err
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, sweepConcurrency)
		for _, e := range page {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				var one ReconcileResponse
				err := a.reconcileOne(ctx, e, &one)
				mu.Lock()
				defer mu.Unlock()
				if errs.Is(err, errs.NotFound) {
					return // gone meanwhile
				}
				if err != nil {
					resp.Failed++
					logging.FromContext(ctx).Warn("reconcile failed; the next pass tries again", "counter_id", e.ID, "error", err.Error())
					return
				}
				resp.Checked += one.Checked
				resp.Corrected += one.Corrected
				resp.Audited += one.Audited
				resp.Drift += one.Drift
				resp.Purged += one.Purged
			})
		}
		wg.Wait()
		if len(page) < sweepPage {
			cur.After, cur.Passes = "", cur.Passes+1
			resp.PassComplete = true
		} else {
			cur.After = page[len(page)-1].ID
		}
		cctx, cancel = a.call(ctx)
		err = a.store.Rollups.SaveReconcileCursor(cctx, cur)
		cancel()
		if err != nil {
			return 0, nil, err
		}
		if resp.PassComplete {
			break
		}
	}
	resp.Cursor = cur.After
	logging.FromContext(ctx).Info("reconcile sweep", "checked", resp.Checked, "corrected", resp.Corrected,
		"failed", resp.Failed, "audit_corrected", resp.Audited, "audit_drift", resp.Drift, "purged", resp.Purged,
		"pass_complete", resp.PassComplete, "cursor", cur.After, "passes", cur.Passes)
	return http.StatusOK, resp, nil
}

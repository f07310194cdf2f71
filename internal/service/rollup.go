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
	ctx, cancel := context.WithTimeout(firestoredb.WithLabel(ctx, "rollup"), 3*a.cfg.RollupCadence+2*a.cfg.FirestoreDeadline)
	defer cancel()
	return a.roller.Include(ctx, rollup.Event{ID: e.ID(), CounterID: id, WrittenAt: ev.WrittenAt(e.Time())})
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
// stale and got corrected, and those that failed (checked again next
// pass). PassComplete is true when this run reached the last counter.
type ReconcileResponse struct {
	Checked      int    `json:"checked"`
	Corrected    int    `json:"corrected"`
	Failed       int    `json:"failed"`
	PassComplete bool   `json:"pass_complete"`
	Cursor       string `json:"cursor,omitempty"`
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
		fixed, err := a.reconcileOne(ctx, *body.CounterID)
		if err != nil {
			return 0, nil, err
		}
		resp := ReconcileResponse{Checked: 1}
		if fixed {
			resp.Corrected = 1
		}
		return http.StatusOK, resp, nil
	}
	return a.sweep(ctx)
}

func (a *app) reconcileOne(ctx context.Context, id string) (bool, error) {
	ctx, cancel := a.call(ctx)
	defer cancel()
	return a.roller.Reconcile(ctx, id)
}

// call bounds one Firestore call of a long-running function.
func (a *app) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.cfg.FirestoreDeadline)
}

func (a *app) sweep(ctx context.Context) (int, any, error) {
	stop := time.Now().Add(a.cfg.ReconcileBudget)
	cctx, cancel := a.call(ctx)
	cur, err := a.counters.LoadReconcileCursor(cctx)
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
		ids, err := a.counters.CounterIDs(cctx, cur.After, sweepPage)
		cancel()
		if err != nil {
			return 0, nil, err
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, sweepConcurrency)
		for _, id := range ids {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				fixed, err := a.reconcileOne(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errs.Is(err, errs.NotFound): // deleted meanwhile
				case err != nil:
					resp.Failed++
					logging.FromContext(ctx).Warn("reconcile failed; the next pass tries again", "counter_id", id, "error", err.Error())
				default:
					resp.Checked++
					if fixed {
						resp.Corrected++
					}
				}
			})
		}
		wg.Wait()
		if len(ids) < sweepPage {
			cur.After, cur.Passes = "", cur.Passes+1
			resp.PassComplete = true
		} else {
			cur.After = ids[len(ids)-1]
		}
		cctx, cancel = a.call(ctx)
		err = a.counters.SaveReconcileCursor(cctx, cur)
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
		"failed", resp.Failed, "pass_complete", resp.PassComplete, "cursor", cur.After, "passes", cur.Passes)
	return http.StatusOK, resp, nil
}

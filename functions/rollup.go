package functions

import (
	"context"
	"net/http"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/logging"
)

// rollupCounter receives a Firestore event for a shard write and returns
// once the counter's roll-up includes it. It returns an error only when a
// retry can help (Firestore unavailable); an event it cannot use is logged
// and acknowledged.
func (a *app) rollupCounter(ctx context.Context, e cloudevents.Event) error {
	log := a.log.With("function", "rollupCounter", "event_id", e.ID())
	ev, err := fsevent.Decode(e.DataContentType(), e.Data())
	if err != nil {
		log.Error("dropping an undecodable event", "error", err.Error(), "subject", e.Subject())
		return nil
	}
	id, ok := shardCounterID(ev.Path())
	if !ok {
		log.Error("dropping an event for a document that is not a shard", "document", ev.Name())
		return nil
	}
	log = log.With("counter_id", id)
	err = a.roller.Include(logging.WithLogger(ctx, log), id, ev.WrittenAt(e.Time()))
	switch {
	case err == nil:
		log.Debug("roll-up includes the write", "deleted", ev.Deleted())
		return nil
	case errs.Is(err, errs.NotFound):
		log.Warn("dropping an event for a deleted counter")
		return nil
	case firestoredb.Transient(err):
		log.Warn("roll-up failed; asking for a retry", "error", err.Error())
		return err
	}
	log.Error("dropping an event the roll-up cannot use", "error", err.Error())
	return nil
}

// shardCounterID returns {counterId} of "counters/{counterId}/shards/{n}".
func shardCounterID(path string) (string, bool) {
	p := strings.Split(path, "/")
	if len(p) != 4 || p[0] != firestoredb.CountersCollection || p[2] != firestoredb.ShardsCollection || counter.ValidateID(p[1]) != nil {
		return "", false
	}
	return p[1], true
}

// ReconcileRequest is the body of reconcileCounters: one counter, or every
// counter when counter_id is absent.
type ReconcileRequest struct {
	CounterID *string `json:"counter_id"`
}

// ReconcileResponse counts the counters checked and those whose roll-up
// was stale and got corrected.
type ReconcileResponse struct {
	Checked   int `json:"checked"`
	Corrected int `json:"corrected"`
}

// reconcileCounters recomputes roll-ups whose last event was lost; Cloud
// Scheduler calls it (README "Roll-up").
func (a *app) reconcileCounters(w http.ResponseWriter, r *http.Request, req *httpapi.Request) (int, any, error) {
	var body ReconcileRequest
	if err := httpapi.DecodeJSON(w, r, maxCounterBody, &body); err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	var resp ReconcileResponse
	check := func(id string) error {
		fixed, err := a.roller.Reconcile(ctx, id)
		if err != nil {
			return firestoredb.Classify(err, "reconcile "+id)
		}
		resp.Checked++
		if fixed {
			resp.Corrected++
		}
		return nil
	}
	if body.CounterID != nil {
		if err := counter.ValidateID(*body.CounterID); err != nil {
			return 0, nil, err
		}
		req.CounterID = *body.CounterID
		if err := check(*body.CounterID); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, resp, nil
	}
	for after := ""; ; {
		ids, err := a.counters.CounterIDs(ctx, after, 300)
		if err != nil {
			return 0, nil, firestoredb.Classify(err, "list counters")
		}
		for _, id := range ids {
			if err := check(id); err != nil && !errs.Is(err, errs.NotFound) {
				return 0, nil, err
			}
		}
		if len(ids) < 300 {
			return http.StatusOK, resp, nil
		}
		after = ids[len(ids)-1]
	}
}

package service

import (
	"context"
	"net/http"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/logging"
)

// UpdateCounterRequest is the input of updateCounter: the settings to
// change.
type UpdateCounterRequest struct {
	CounterID *string `json:"counter_id"`
	// Ranked says whether topCounters shows the counter.
	Ranked *bool `json:"ranked"`
}

// UpdateCounterResponse is the answer of updateCounter.
type UpdateCounterResponse struct {
	CounterID string `json:"counter_id"`
	Ranked    bool   `json:"ranked"`
}

// updateCounter changes a counter's settings; admins only (an app's
// moderation): which counters rankings show is the app's to decide.
func (a *app) updateCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body UpdateCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return 0, nil, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if !req.Admin {
		return 0, nil, errs.New(errs.PermissionDenied, "updateCounter is for admins (an app's backend)")
	}
	if body.Ranked == nil {
		return 0, nil, errs.Invalid("ranked", "is required: it is the setting updateCounter changes")
	}
	if err := a.store.Counters.SetRanked(ctx, id, *body.Ranked); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, UpdateCounterResponse{CounterID: id, Ranked: *body.Ranked}, nil
}

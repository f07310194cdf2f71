package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/errs"
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
func (core *Core) UpdateCounter(ctx context.Context, caller Caller, body UpdateCounterRequest) (UpdateCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return UpdateCounterResponse{}, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if !caller.Admin {
		return UpdateCounterResponse{}, errs.New(errs.PermissionDenied, "updateCounter is for admins (an app's backend)")
	}
	if body.Ranked == nil {
		return UpdateCounterResponse{}, errs.Invalid("ranked", "is required: it is the setting updateCounter changes")
	}
	if err := core.counters.SetRanked(ctx, id, *body.Ranked); err != nil {
		return UpdateCounterResponse{}, err
	}
	return UpdateCounterResponse{CounterID: id, Ranked: *body.Ranked}, nil
}

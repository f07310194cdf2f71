package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/wire"
)

// updateCounter changes a counter's settings; admins only (an app's
// moderation): which counters rankings show is the app's to decide.
func (core *Core) UpdateCounter(ctx context.Context, caller Caller, body wire.UpdateCounterRequest) (wire.UpdateCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return wire.UpdateCounterResponse{}, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if !caller.Admin {
		return wire.UpdateCounterResponse{}, errs.New(errs.PermissionDenied, "updateCounter is for admins (an app's backend)")
	}
	if body.Ranked == nil {
		return wire.UpdateCounterResponse{}, errs.Invalid("ranked", "is required: it is the setting updateCounter changes")
	}
	if err := core.counters.SetRanked(ctx, id, *body.Ranked); err != nil {
		return wire.UpdateCounterResponse{}, err
	}
	return wire.UpdateCounterResponse{CounterID: id, Ranked: *body.Ranked}, nil
}

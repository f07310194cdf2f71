package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// DeleteCounter deletes a counter, for its owner and admins: a tombstone
// at once (404 from every instance within SHARD_COUNT_CACHE), and
// everything under it purged, the id free again after reusable_after
// (docs/design/lifecycle.md). Deleting it again answers the same.
func (core *Core) DeleteCounter(ctx context.Context, caller Caller, body wire.DeleteCounterRequest) (wire.DeleteCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return wire.DeleteCounterResponse{}, err
	}
	// A deleted counter's tombstone too: deleting again (a retry whose
	// answer was lost) answers the same and purges on.
	if _, err := core.manage(ctx, caller, id, core.counters.Stored, ratelimit.Delete); err != nil {
		return wire.DeleteCounterResponse{}, err
	}
	tomb, err := core.counters.Delete(ctx, id, core.lateWrites())
	if err != nil {
		return wire.DeleteCounterResponse{}, err
	}
	logging.FromContext(ctx).Info("deleted a counter", "reusable_after", tomb.Deleted.PurgeAfter)
	return wire.DeleteCounterResponse{CounterID: id, Deleted: true, ReusableAfter: rfc3339Time(tomb.Deleted.PurgeAfter)}, nil
}

// ResetCounter sets a plain counter's value as of a read time, for its
// owner and admins: increments committed after it count on top.
func (core *Core) ResetCounter(ctx context.Context, caller Caller, body wire.ResetCounterRequest) (wire.ResetCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return wire.ResetCounterResponse{}, err
	}
	var v int64
	if body.Count != nil {
		v = *body.Count
	}
	if err := counter.ValidateResetValue(v); err != nil {
		return wire.ResetCounterResponse{}, err
	}
	if _, err := core.manage(ctx, caller, id, core.counters.Live, ratelimit.Reset); err != nil {
		return wire.ResetCounterResponse{}, err
	}
	at, err := core.increments.Reset(ctx, id, v)
	if err != nil {
		return wire.ResetCounterResponse{}, err
	}
	return wire.ResetCounterResponse{CounterID: id, Count: v, AsOf: rfc3339Time(at)}, nil
}

// maxListLimit bounds a page of listCounters (and of topCounters).
const maxListLimit = 100

func limitOf(limit *int64, def int) (int, error) {
	if limit == nil {
		return def, nil
	}
	if *limit < 1 || *limit > maxListLimit {
		return 0, errs.Invalid("limit", "must be between 1 and %d", maxListLimit)
	}
	return int(*limit), nil
}

// ListCounters pages through counters by id: the caller's own, an
// owner's (an admin may name any), or, for an admin, all of them.
func (core *Core) ListCounters(ctx context.Context, caller Caller, body wire.ListCountersRequest) (wire.ListCountersResponse, error) {
	limit, err := limitOf(body.Limit, 20)
	if err != nil {
		return wire.ListCountersResponse{}, err
	}
	// A page token is the last id of the previous page: the owner filter
	// is applied here, so it needs no signature.
	after := deref(body.PageToken)
	if after != "" && counter.ValidateID(after) != nil {
		return wire.ListCountersResponse{}, errs.Invalid("page_token", "is not a page token of listCounters")
	}
	if body.Owner != nil {
		if err := counter.ValidateUID("owner", *body.Owner); err != nil {
			return wire.ListCountersResponse{}, err
		}
	}
	owner, all := caller.User, false
	switch {
	case body.Owner != nil && !caller.Admin && *body.Owner != caller.User:
		return wire.ListCountersResponse{}, &errs.Error{Code: errs.PermissionDenied, Field: "owner", Message: "owner other than yourself needs an admin"}
	case body.Owner != nil:
		owner = *body.Owner
	case caller.Admin:
		all = true
	case caller.User == "":
		return wire.ListCountersResponse{}, errs.New(errs.Unauthenticated, "listCounters lists your own counters: sign in")
	}
	if err := core.allow(ctx, caller, ratelimit.List, 1); err != nil {
		return wire.ListCountersResponse{}, err
	}
	cs, next, err := core.counters.List(ctx, owner, all, after, limit)
	if err != nil {
		return wire.ListCountersResponse{}, err
	}
	resp := wire.ListCountersResponse{Counters: make([]wire.ListedCounter, len(cs)), NextPageToken: next}
	for i, c := range cs {
		resp.Counters[i] = wire.ListedCounter{CounterID: c.ID, Count: c.Count, NumShards: c.NumShards,
			CreatedAt: rfc3339Time(c.CreatedAt), Owner: c.Owner, Unique: c.Mode.Members()}
	}
	return resp, nil
}

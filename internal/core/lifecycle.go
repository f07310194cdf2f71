package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// DeleteCounterRequest is the input of deleteCounter.
type DeleteCounterRequest struct {
	CounterID *string `json:"counter_id"`
}

// DeleteCounterResponse is the answer of deleteCounter.
type DeleteCounterResponse struct {
	CounterID string `json:"counter_id"`
	Deleted   bool   `json:"deleted"`
	// ReusableAfter is when the id may be created again: no late write of
	// the deleted counter can land after it.
	ReusableAfter string `json:"reusable_after"`
}

// DeleteCounter deletes a counter, for its owner and admins: a tombstone
// at once (404 from every instance within SHARD_COUNT_CACHE), and
// everything under it purged, the id free again after reusable_after
// (docs/design/lifecycle.md). Deleting it again answers the same.
func (core *Core) DeleteCounter(ctx context.Context, caller Caller, body DeleteCounterRequest) (DeleteCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return DeleteCounterResponse{}, err
	}
	// A deleted counter's tombstone too: deleting again (a retry whose
	// answer was lost) answers the same and purges on.
	if _, err := core.manage(ctx, caller, id, core.counters.Stored, ratelimit.Delete); err != nil {
		return DeleteCounterResponse{}, err
	}
	tomb, err := core.counters.Delete(ctx, id, core.lateWrites())
	if err != nil {
		return DeleteCounterResponse{}, err
	}
	logging.FromContext(ctx).Info("deleted a counter", "reusable_after", tomb.Deleted.PurgeAfter)
	return DeleteCounterResponse{CounterID: id, Deleted: true, ReusableAfter: rfc3339Time(tomb.Deleted.PurgeAfter)}, nil
}

// ResetCounterRequest is the input of resetCounter.
type ResetCounterRequest struct {
	CounterID *string `json:"counter_id"`
	// Count is the value to set (default 0).
	Count *int64 `json:"count"`
}

// ResetCounterResponse is the answer of resetCounter: the counter held
// Count at AsOf; increments committed after AsOf count on top.
type ResetCounterResponse struct {
	CounterID string `json:"counter_id"`
	Count     int64  `json:"count"`
	AsOf      string `json:"as_of"`
}

// ResetCounter sets a plain counter's value as of a read time, for its
// owner and admins: increments committed after it count on top.
func (core *Core) ResetCounter(ctx context.Context, caller Caller, body ResetCounterRequest) (ResetCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return ResetCounterResponse{}, err
	}
	var v int64
	if body.Count != nil {
		v = *body.Count
	}
	if err := counter.ValidateResetValue(v); err != nil {
		return ResetCounterResponse{}, err
	}
	if _, err := core.manage(ctx, caller, id, core.counters.Live, ratelimit.Reset); err != nil {
		return ResetCounterResponse{}, err
	}
	at, err := core.increments.Reset(ctx, id, v)
	if err != nil {
		return ResetCounterResponse{}, err
	}
	return ResetCounterResponse{CounterID: id, Count: v, AsOf: rfc3339Time(at)}, nil
}

// ListCountersRequest is the input of listCounters.
type ListCountersRequest struct {
	Limit     *int64  `json:"limit"`
	PageToken *string `json:"page_token"`
	// Owner filters by owner: the caller's own uid, or (admins) anyone's.
	Owner *string `json:"owner"`
}

// ListCountersResponse is a page of counters in id order.
type ListCountersResponse struct {
	Counters      []ListedCounter `json:"counters"`
	NextPageToken string          `json:"next_page_token,omitempty"`
}

// ListedCounter is one counter of a list: its roll-up, shard count and
// owner.
type ListedCounter struct {
	CounterID string `json:"counter_id"`
	Count     int64  `json:"count"`
	NumShards int    `json:"num_shards"`
	CreatedAt string `json:"created_at"`
	Owner     string `json:"owner"`
	Unique    bool   `json:"unique,omitempty"`
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
func (core *Core) ListCounters(ctx context.Context, caller Caller, body ListCountersRequest) (ListCountersResponse, error) {
	limit, err := limitOf(body.Limit, 20)
	if err != nil {
		return ListCountersResponse{}, err
	}
	// A page token is the last id of the previous page: the owner filter
	// is applied here, so it needs no signature.
	after := deref(body.PageToken)
	if after != "" && counter.ValidateID(after) != nil {
		return ListCountersResponse{}, errs.Invalid("page_token", "is not a page token of listCounters")
	}
	if body.Owner != nil {
		if err := counter.ValidateUID("owner", *body.Owner); err != nil {
			return ListCountersResponse{}, err
		}
	}
	owner, all := caller.User, false
	switch {
	case body.Owner != nil && !caller.Admin && *body.Owner != caller.User:
		return ListCountersResponse{}, &errs.Error{Code: errs.PermissionDenied, Field: "owner", Message: "owner other than yourself needs an admin"}
	case body.Owner != nil:
		owner = *body.Owner
	case caller.Admin:
		all = true
	case caller.User == "":
		return ListCountersResponse{}, errs.New(errs.Unauthenticated, "listCounters lists your own counters: sign in")
	}
	if err := core.allow(ctx, caller, ratelimit.List, 1); err != nil {
		return ListCountersResponse{}, err
	}
	cs, next, err := core.counters.List(ctx, owner, all, after, limit)
	if err != nil {
		return ListCountersResponse{}, err
	}
	resp := ListCountersResponse{Counters: make([]ListedCounter, len(cs)), NextPageToken: next}
	for i, c := range cs {
		resp.Counters[i] = ListedCounter{CounterID: c.ID, Count: c.Count, NumShards: c.NumShards,
			CreatedAt: rfc3339Time(c.CreatedAt), Owner: c.Owner, Unique: c.Mode.Members()}
	}
	return resp, nil
}

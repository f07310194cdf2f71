package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// counterToCreate validates a createCounter body and resolves the id and
// shard count to use; the heuristic's choice is capped at maxShards (a
// client's followers_count is not to be trusted), an explicit num_shards
// above it is refused.
func counterToCreate(b wire.CreateCounterRequest, maxShards int) (counter.Counter, error) {
	c := counter.Counter{ID: counter.NewID(), Mode: counter.ModeOf(deref(b.Unique), nil, false, false)}
	if b.CounterID != nil {
		if err := counter.ValidateID(*b.CounterID); err != nil {
			return c, err
		}
		c.ID = *b.CounterID
	}
	postType, err := counter.ParsePostType(deref(b.PostType))
	if err != nil {
		return c, err
	}
	if b.FollowersCount != nil {
		if err := counter.ValidateFollowers(*b.FollowersCount); err != nil {
			return c, err
		}
	}
	switch {
	case b.NumShards != nil:
		if err := counter.ValidateShards(*b.NumShards); err != nil {
			return c, err
		}
		if *b.NumShards > int64(maxShards) {
			return c, &errs.Error{Code: errs.PermissionDenied, Field: "num_shards",
				Message: fmt.Sprintf("num_shards above %d needs an admin (USER_MAX_SHARDS)", maxShards)}
		}
		c.NumShards = int(*b.NumShards)
	case b.FollowersCount != nil:
		c.NumShards = min(counter.ShardsFor(*b.FollowersCount, postType), maxShards)
	default:
		c.NumShards = min(counter.DefaultShards, maxShards)
	}
	return c, nil
}

// CreateCounter creates a counter: an admin's (any shards, ranked unless
// it says not), an end user's with USER_CREATE=on (owned by them, up to
// USER_MAX_SHARDS, never ranked), or, for an admin, one of a kind ahead of
// its first use. With no num_shards the heuristic picks them from
// followers_count and post_type; with no id, one is generated.
func (core *Core) CreateCounter(ctx context.Context, caller Caller, body wire.CreateCounterRequest) (wire.CreateCounterResponse, error) {
	if kind, ok := core.cfg.Kinds.Of(deref(body.CounterID)); ok {
		return core.createOfKind(ctx, caller, body, kind)
	}
	origin, maxShards, err := core.mayCreate(caller)
	if err != nil {
		return wire.CreateCounterResponse{}, err
	}
	// KIND:KEY ids are the kinds' (COUNTER_KINDS), declared or to be: an
	// end user takes none before the app declares its kind.
	if origin != counter.ByAdmin && strings.Contains(deref(body.CounterID), ":") {
		return wire.CreateCounterResponse{}, &errs.Error{Code: errs.PermissionDenied, Field: "counter_id",
			Message: "ids with a colon (KIND:KEY) name counters of kinds, which come into being on their first use; end users create others"}
	}
	c, err := counterToCreate(body, maxShards)
	if err != nil {
		return wire.CreateCounterResponse{}, err
	}
	c.Origin, c.Ranked = origin, origin == counter.ByAdmin
	if body.Ranked != nil {
		if origin != counter.ByAdmin && *body.Ranked {
			return wire.CreateCounterResponse{}, &errs.Error{Code: errs.PermissionDenied, Field: "ranked",
				Message: "ranked: only an admin decides which counters rankings show"}
		}
		c.Ranked = *body.Ranked
	}
	logging.Annotate(ctx, "counter_id", c.ID)
	if err := core.allow(ctx, caller, ratelimit.Create, 1); err != nil {
		return wire.CreateCounterResponse{}, err
	}
	c.Owner = caller.User
	c, err = core.counters.Create(ctx, c)
	if err != nil {
		return wire.CreateCounterResponse{}, err
	}
	return wire.CreateCounterResponse{CounterID: c.ID, NumShards: c.NumShards, Unique: c.Mode.Members()}, nil
}

// createOfKind creates a counter of a declared kind ahead of its first
// use, which an admin may (a backend that creates a post, say); it takes
// the kind's settings, so the body may name no others. No end user creates
// one: its first use does.
func (core *Core) createOfKind(ctx context.Context, caller Caller, body wire.CreateCounterRequest, kind counter.Kind) (wire.CreateCounterResponse, error) {
	if !caller.Admin {
		return wire.CreateCounterResponse{}, errs.New(errs.PermissionDenied, "counters of kind %q come into being on their first use; no end user creates or owns one", kind.Name)
	}
	if err := counter.ValidateID(*body.CounterID); err != nil {
		return wire.CreateCounterResponse{}, err
	}
	if body != (wire.CreateCounterRequest{CounterID: body.CounterID}) {
		return wire.CreateCounterResponse{}, errs.Invalid("counter_id", "%q is of kind %q, which sets its shards, uniqueness and ranking (COUNTER_KINDS): send counter_id alone", *body.CounterID, kind.Name)
	}
	logging.Annotate(ctx, "counter_id", *body.CounterID)
	c, err := core.counters.Create(ctx, kind.Counter(*body.CounterID))
	if err != nil {
		return wire.CreateCounterResponse{}, err
	}
	return wire.CreateCounterResponse{CounterID: c.ID, NumShards: c.NumShards, Unique: c.Mode.Members()}, nil
}

package core

import (
	"context"
	"fmt"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// ReshardCounter changes a live counter's shard count, for its owner (up
// to USER_MAX_SHARDS, for one an end user created) and admins: growing at
// once, shrinking by merging the shards beyond, with no increment lost
// (docs/design/resharding.md).
func (core *Core) ReshardCounter(ctx context.Context, caller Caller, body wire.ReshardCounterRequest) (wire.ReshardCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return wire.ReshardCounterResponse{}, err
	}
	if body.NumShards == nil {
		return wire.ReshardCounterResponse{}, errs.Invalid("num_shards", "is required")
	}
	if err := counter.ValidateShards(*body.NumShards); err != nil {
		return wire.ReshardCounterResponse{}, err
	}
	n := int(*body.NumShards)
	c, err := core.manage(ctx, caller, id, core.counters.Live, ratelimit.Reshard)
	if err != nil {
		return wire.ReshardCounterResponse{}, err
	}
	if err := c.Mode.Reshards(id); err != nil {
		return wire.ReshardCounterResponse{}, err
	}
	if limit := c.MaxShardsFor(core.cfg.UserMaxShards); !caller.Admin && n > limit {
		return wire.ReshardCounterResponse{}, &errs.Error{Code: errs.PermissionDenied, Field: "num_shards",
			Message: fmt.Sprintf("num_shards above %d needs an admin: counter %q was created by an end user (USER_MAX_SHARDS)", limit, id)}
	}
	before, after, merged, err := core.counters.Reshard(ctx, id, n, core.lateWrites(), "request")
	if err != nil {
		return wire.ReshardCounterResponse{}, err
	}
	if after.NumShards != before.NumShards {
		logging.FromContext(ctx).Info("resharded", "from", before.NumShards, "to", after.NumShards)
	}
	resp := wire.ReshardCounterResponse{CounterID: id, NumShards: after.NumShards, PreviousNumShards: before.NumShards,
		MergeUntil: rfc3339Time(after.Reshard.MergeUntil), ShardsMerged: merged}
	return resp, nil
}

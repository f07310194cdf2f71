package core

import (
	"context"
	"fmt"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// ReshardCounterRequest is the input of reshardCounter.
type ReshardCounterRequest struct {
	CounterID *string `json:"counter_id"`
	NumShards *int64  `json:"num_shards"`
}

// ReshardCounterResponse is the answer of reshardCounter.
type ReshardCounterResponse struct {
	CounterID         string `json:"counter_id"`
	NumShards         int    `json:"num_shards"`
	PreviousNumShards int    `json:"previous_num_shards"`
	// MergeUntil is set when shrinking: shards >= num_shards keep being
	// merged until then, when no instance can still write to them.
	MergeUntil string `json:"merge_until,omitempty"`
	// ShardsMerged is how many old shards this request already merged.
	ShardsMerged int `json:"shards_merged"`
}

// ReshardCounter changes a live counter's shard count, for its owner (up
// to USER_MAX_SHARDS, for one an end user created) and admins: growing at
// once, shrinking by merging the shards beyond, with no increment lost
// (docs/design/resharding.md).
func (core *Core) ReshardCounter(ctx context.Context, caller Caller, body ReshardCounterRequest) (ReshardCounterResponse, error) {
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return ReshardCounterResponse{}, err
	}
	if body.NumShards == nil {
		return ReshardCounterResponse{}, errs.Invalid("num_shards", "is required")
	}
	if err := counter.ValidateShards(*body.NumShards); err != nil {
		return ReshardCounterResponse{}, err
	}
	n := int(*body.NumShards)
	c, err := core.manage(ctx, caller, id, core.counters.Live, ratelimit.Reshard)
	if err != nil {
		return ReshardCounterResponse{}, err
	}
	if err := c.Mode.Reshards(id); err != nil {
		return ReshardCounterResponse{}, err
	}
	if limit := c.MaxShardsFor(core.cfg.UserMaxShards); !caller.Admin && n > limit {
		return ReshardCounterResponse{}, &errs.Error{Code: errs.PermissionDenied, Field: "num_shards",
			Message: fmt.Sprintf("num_shards above %d needs an admin: counter %q was created by an end user (USER_MAX_SHARDS)", limit, id)}
	}
	before, after, merged, err := core.counters.Reshard(ctx, id, n, core.lateWrites(), "request")
	if err != nil {
		return ReshardCounterResponse{}, err
	}
	if after.NumShards != before.NumShards {
		logging.FromContext(ctx).Info("resharded", "from", before.NumShards, "to", after.NumShards)
	}
	resp := ReshardCounterResponse{CounterID: id, NumShards: after.NumShards, PreviousNumShards: before.NumShards,
		MergeUntil: rfc3339Time(after.Reshard.MergeUntil), ShardsMerged: merged}
	return resp, nil
}

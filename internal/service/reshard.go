package service

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
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

// lateWrites is how long after a shrink or a deletion an instance may
// still write to a counter as it was: its cached counter document lives
// SHARD_COUNT_CACHE, and a commit started just before may take
// FIRESTORE_DEADLINE.
func (a *app) lateWrites() time.Duration {
	return a.cfg.ShardCountCache + a.cfg.FirestoreDeadline + time.Second
}

func (a *app) reshardCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body ReshardCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return 0, nil, err
	}
	if body.NumShards == nil {
		return 0, nil, errs.Invalid("num_shards", "is required")
	}
	if err := counter.ValidateShards(*body.NumShards); err != nil {
		return 0, nil, err
	}
	n := int(*body.NumShards)
	c, err := a.manage(ctx, req, id, a.store.Counters.Live, ratelimit.Reshard)
	if err != nil {
		return 0, nil, err
	}
	if limit := c.MaxShardsFor(a.cfg.UserMaxShards); !req.Admin && n > limit {
		return 0, nil, &errs.Error{Code: errs.PermissionDenied, Field: "num_shards",
			Message: fmt.Sprintf("num_shards above %d needs an admin: counter %q was created by an end user (USER_MAX_SHARDS)", limit, id)}
	}
	before, after, merged, err := a.store.Counters.Reshard(ctx, id, n, a.lateWrites(), "request")
	if err != nil {
		return 0, nil, err
	}
	if after.NumShards != before.NumShards {
		logging.FromContext(ctx).Info("resharded", "from", before.NumShards, "to", after.NumShards)
	}
	resp := ReshardCounterResponse{CounterID: id, NumShards: after.NumShards, PreviousNumShards: before.NumShards,
		MergeUntil: rfc3339Time(after.Reshard.MergeUntil), ShardsMerged: merged}
	return http.StatusOK, resp, nil
}

package core

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// sketchesPerBucket is what history reads per bucket of counter id: a
// distinct counter's bucket is a sketch a shard (of its hours and days
// only), any other's one document.
func (core *Core) sketchesPerBucket(id string, h *historyRange) (int, error) {
	kind, _ := core.cfg.Kinds.Of(id)
	switch {
	case !kind.Distinct && h.union != "":
		return 0, errs.Invalid("window", "goes with counters of a distinct kind; history sums any other's buckets")
	case !kind.Distinct:
		return 1, nil
	case h.g == windows.Minute:
		return 0, errs.Invalid("history", "of a distinct counter is by hour or day: its minutes keep no sketches")
	}
	return kind.Counter(id).NumShards, nil
}

// distinctHistory answers a distinct counter's history (each bucket's
// distinct members) or window (the distinct members of its days), from
// the shards' sketches of its buckets.
func (core *Core) distinctHistory(ctx context.Context, c counter.Counter, h *historyRange, resp GetCounterResponse) (GetCounterResponse, error) {
	if !c.Distinct {
		return GetCounterResponse{}, errs.Invalid("window", "goes with counters of a distinct kind; %q is not one", c.ID)
	}
	tallies, union, err := core.windows.DistinctHistory(ctx, c.ID, h.g, h.starts)
	if err != nil {
		return GetCounterResponse{}, err
	}
	if h.union != "" {
		resp.Count, resp.Window, resp.From = union, h.union, h.starts[0].Format(time.RFC3339)
		return resp, nil
	}
	resp.History = make([]HistoryPoint, len(tallies))
	for i, t := range tallies {
		resp.History[i] = HistoryPoint{Start: h.starts[i].Format(time.RFC3339), Count: t.Count}
	}
	return resp, nil
}

package service

import (
	"context"
	"net/http"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/windows"
)

// topReads bounds what one topCounters reads: a page of a ranking.
const topReads = maxListLimit

// TopCountersRequest is the input of topCounters.
type TopCountersRequest struct {
	// Window is minute, hour, day (the current bucket, or the last
	// complete one with Previous) or all (by total).
	Window   *string `json:"window"`
	Limit    *int64  `json:"limit"`
	Previous *bool   `json:"previous"`
}

// TopCountersResponse ranks counters, highest count first, ties by id.
type TopCountersResponse struct {
	Window string `json:"window"`
	// Start is the start of the window ranked (absent for all).
	Start    string          `json:"start,omitempty"`
	Counters []RankedCounter `json:"counters"`
}

// RankedCounter is one counter of a ranking.
type RankedCounter struct {
	CounterID string `json:"counter_id"`
	Count     int64  `json:"count"`
}

func (a *app) topCounters(ctx context.Context, req *httpapi.Request) (int, any, error) {
	ctx = firestoredb.WithLabel(ctx, "read")
	var body TopCountersRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	limit, err := limitOf(body.Limit, 10)
	if err != nil {
		return 0, nil, err
	}
	window := deref(body.Window)
	resp := TopCountersResponse{Window: window}
	var g windows.Granularity
	var start time.Time
	switch window {
	case "all":
		if body.Previous != nil {
			return 0, nil, errs.Invalid("previous", "goes with window minute, hour or day")
		}
	case "":
		return 0, nil, errs.Invalid("window", "is required: minute, hour, day or all")
	default:
		if g, err = windows.Parse("window", window); err != nil {
			return 0, nil, errs.Invalid("window", "must be \"minute\", \"hour\", \"day\" or \"all\"")
		}
		if a.cfg.Windows == nil {
			return 0, nil, errs.New(errs.FailedPrecondition, "window: the roll-up keeps no windows (WINDOWS=off); window=all ranks by total")
		}
		start = windows.Window(g, time.Now(), body.Previous != nil && *body.Previous)
		resp.Start = start.Format(time.RFC3339)
	}
	if err := a.allow(ctx, req, ratelimit.Top, 1); err != nil {
		return 0, nil, err
	}
	ranked, err := a.store.Windows.Top(ctx, g, start, limit)
	if err != nil {
		return 0, nil, err
	}
	resp.Counters = make([]RankedCounter, len(ranked))
	for i, r := range ranked {
		resp.Counters[i] = RankedCounter{CounterID: r.CounterID, Count: r.Count}
	}
	return http.StatusOK, resp, nil
}

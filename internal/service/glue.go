package service

import (
	"context"
	"net/http"
	"reflect"

	"github.com/shardcount/shardcount/internal/core"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/reconcile"
	"github.com/shardcount/shardcount/internal/wire"
)

// The glue of the functions: decode a request into the input of its core
// function, call it as the request's caller, answer.

type handler = func(*app, context.Context, *httpapi.Request) (int, any, error)

// endpoint is an HTTP function's handler, and its wire contract: the type
// of its request's data and those of its answers, which the web client's
// types (client/web/src/wire.ts), the Go client and docs/reference/api.md
// are held to (wire_test.go).
type endpoint struct {
	handle handler
	in     reflect.Type
	out    []reflect.Type
}

// call is the glue of a core function that answers status.
func call[In, Out any](f func(*core.Core, context.Context, core.Caller, In) (Out, error), status int) endpoint {
	return endpoint{in: reflect.TypeFor[In](), out: []reflect.Type{reflect.TypeFor[Out]()}, handle: func(a *app, ctx context.Context, req *httpapi.Request) (int, any, error) {
		var in In
		if err := req.Decode(&in); err != nil {
			return 0, nil, err
		}
		out, err := f(a.core, ctx, callerOf(req), in)
		if err != nil {
			return 0, nil, err
		}
		return status, out, nil
	}}
}

// callerOf is who sent req, as the edge identified them.
func callerOf(req *httpapi.Request) core.Caller {
	return core.Caller{Function: req.Function, User: req.User, Anonymous: req.Anonymous, Admin: req.Admin, IssuedAt: req.IssuedAt,
		Addr: req.ClientAddr, AppToken: req.AppToken, OneUse: req.OneUse}
}

// IncrementListResponse answers a request of several increments, one
// result per item, in order.
type IncrementListResponse struct {
	Results []IncrementItemResult `json:"results"`
}

// IncrementItemResult is one item's outcome: its status (200, or the
// status the item alone would have had) and its answer or error.
type IncrementItemResult struct {
	Status int `json:"status"`
	*wire.IncrementCounterResponse
	Error *httpapi.ErrorDetail `json:"error,omitempty"`
}

// incrementCounter takes the Idempotency-Key header, and answers a list
// with a status per item; a replay says so in a header.
func incrementCounter(a *app, ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body wire.IncrementCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	hk, err := headerKey(req)
	if err != nil {
		return 0, nil, err
	}
	one, list, err := a.core.IncrementCounter(ctx, callerOf(req), body, hk)
	switch {
	case err != nil:
		return 0, nil, err
	case list == nil:
		if one.Replayed {
			req.SetHeader("Idempotent-Replayed", "true")
		}
		return http.StatusOK, one, nil
	}
	resp := IncrementListResponse{Results: make([]IncrementItemResult, len(list))}
	for i, o := range list {
		if o.Err != nil {
			d := httpapi.ErrorDetailOf(o.Err)
			resp.Results[i] = IncrementItemResult{Status: httpapi.Status(o.Err), Error: &d}
			httpapi.CountRefusal(ctx, req.Function, resp.Results[i].Status) // an item refused counts as a request would
			continue
		}
		resp.Results[i] = IncrementItemResult{Status: http.StatusOK, IncrementCounterResponse: o.Response}
	}
	return http.StatusOK, resp, nil
}

// GetCountersResponse answers getCounters: one row per counter, in the
// order asked.
type GetCountersResponse struct {
	Counters []CounterRowResult `json:"counters"`
}

// CounterRowResult is one counter's row, or the error it alone had (then
// without a count).
type CounterRowResult struct {
	wire.CounterRow
	Error *httpapi.ErrorDetail `json:"error,omitempty"`
}

// getCounters answers a row per counter; a row's internal error is logged
// (and hidden, as any).
func getCounters(a *app, ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body wire.GetCountersRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	rows, err := a.core.GetCounters(ctx, callerOf(req), body)
	if err != nil {
		return 0, nil, err
	}
	resp := GetCountersResponse{Counters: make([]CounterRowResult, len(rows))}
	for i, r := range rows {
		resp.Counters[i].CounterRow = r.Row
		if r.Err != nil {
			d := httpapi.ErrorDetailOf(r.Err)
			resp.Counters[i].Error = &d
			if d.Code == errs.Internal || d.Code == errs.DataLoss {
				logging.FromContext(ctx).Error("a row of getCounters failed", "counter_id", r.Row.CounterID, "error", r.Err.Error())
			}
		}
	}
	return http.StatusOK, resp, nil
}

// headerKey returns the request's Idempotency-Key header, if it was sent:
// once, and valid.
func headerKey(req *httpapi.Request) (*string, error) {
	values := req.HTTP.Header.Values("Idempotency-Key")
	switch len(values) {
	case 0:
		return nil, nil
	case 1:
		return &values[0], increment.ValidateKey("Idempotency-Key", &values[0])
	}
	return nil, errs.Invalid("Idempotency-Key", "must be sent once, not %d times", len(values))
}

func reconcileCounters(a *app, ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body reconcile.ReconcileRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	resp, err := a.reconciler.Reconcile(ctx, body)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, resp, nil
}

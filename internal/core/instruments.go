package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// RecordInstrumentsRequest is the input of recordInstruments.
type RecordInstrumentsRequest struct {
	Instruments []instruments.Input `json:"instruments"`
}

// RecordInstrumentsResponse lists the new documents' ids in request order.
type RecordInstrumentsResponse struct {
	IDs []string `json:"ids"`
}

func (b RecordInstrumentsRequest) batch() ([]instruments.Instrument, error) {
	if n := len(b.Instruments); n < 1 || n > instruments.MaxBatch {
		return nil, errs.Invalid("instruments", "must hold 1 to %d instruments, got %d", instruments.MaxBatch, n)
	}
	out := make([]instruments.Instrument, len(b.Instruments))
	for i, in := range b.Instruments {
		v, err := in.Validate(i)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// RecordInstruments writes prices, for admins only: every reader sees
// them, so an end user could plant a price first for all.
func (core *Core) RecordInstruments(ctx context.Context, caller Caller, body RecordInstrumentsRequest) (RecordInstrumentsResponse, error) {
	if !caller.Admin {
		return RecordInstrumentsResponse{}, errs.New(errs.PermissionDenied, "recordInstruments is for admins (your app's backend): every reader sees what it writes")
	}
	batch, err := body.batch()
	if err != nil {
		return RecordInstrumentsResponse{}, err
	}
	if err := core.allow(ctx, caller, ratelimit.Record, len(batch)); err != nil {
		return RecordInstrumentsResponse{}, err
	}
	ids, err := core.instrs.Record(ctx, batch)
	if err != nil {
		return RecordInstrumentsResponse{}, err
	}
	return RecordInstrumentsResponse{IDs: ids}, nil
}

// QueryInstrumentsRequest is the input of queryInstruments (its query
// string, or a callable request's data).
type QueryInstrumentsRequest struct {
	Field     *string `json:"field"`
	Value     *string `json:"value"`
	Limit     *int    `json:"limit"`
	PageToken *string `json:"page_token"`
}

// QueryInstrumentsResponse is a page of instruments, newest first.
type QueryInstrumentsResponse struct {
	Instruments   []instruments.Instrument `json:"instruments"`
	NextPageToken string                   `json:"next_page_token,omitempty"`
}

func (q QueryInstrumentsRequest) validate() (field, value string, limit int, token string, err error) {
	field, value, token, limit = deref(q.Field), deref(q.Value), deref(q.PageToken), instruments.DefaultLimit
	if q.Limit != nil {
		limit = *q.Limit
	}
	if err := instruments.ValidateQuery(field, value, limit); err != nil {
		return "", "", 0, "", err
	}
	return field, value, limit, token, nil
}

// QueryInstruments pages through the instruments whose field equals value,
// newest first, for a token of query: one "in" query per chunk of shard
// values, merged by timestamp (internal/shardedts), its page token signed.
func (core *Core) QueryInstruments(ctx context.Context, caller Caller, body QueryInstrumentsRequest) (QueryInstrumentsResponse, error) {
	field, value, limit, token, err := body.validate()
	if err != nil {
		return QueryInstrumentsResponse{}, err
	}
	if err := core.allow(ctx, caller, ratelimit.Query, 1); err != nil {
		return QueryInstrumentsResponse{}, err
	}
	page, next, err := core.instrs.Query(ctx, field, value, limit, token)
	if err != nil {
		return QueryInstrumentsResponse{}, err
	}
	if page == nil {
		page = []instruments.Instrument{}
	}
	return QueryInstrumentsResponse{Instruments: page, NextPageToken: next}, nil
}

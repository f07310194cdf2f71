package service

import (
	"context"
	"net/http"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
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

func (a *app) recordInstruments(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body RecordInstrumentsRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	batch, err := body.batch()
	if err != nil {
		return 0, nil, err
	}
	if err := a.allow(ctx, req, ratelimit.Record, len(batch)); err != nil {
		return 0, nil, err
	}
	ids, err := a.instruments.Record(ctx, batch)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, RecordInstrumentsResponse{IDs: ids}, nil
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

func (a *app) queryInstruments(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body QueryInstrumentsRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	field, value, limit, token, err := body.validate()
	if err != nil {
		return 0, nil, err
	}
	if err := a.allow(ctx, req, ratelimit.Query, 1); err != nil {
		return 0, nil, err
	}
	page, next, err := a.instruments.Query(ctx, field, value, limit, token)
	if err != nil {
		return 0, nil, err
	}
	if page == nil {
		page = []instruments.Instrument{}
	}
	return http.StatusOK, QueryInstrumentsResponse{Instruments: page, NextPageToken: next}, nil
}

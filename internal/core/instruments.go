package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// RecordInstruments writes prices, for admins only: every reader sees
// them, so an end user could plant a price first for all.
func (core *Core) RecordInstruments(ctx context.Context, caller Caller, body wire.RecordInstrumentsRequest) (wire.RecordInstrumentsResponse, error) {
	if !caller.Admin {
		return wire.RecordInstrumentsResponse{}, errs.New(errs.PermissionDenied, "recordInstruments is for admins (your app's backend): every reader sees what it writes")
	}
	batch, err := instruments.ValidateBatch(body.Instruments)
	if err != nil {
		return wire.RecordInstrumentsResponse{}, err
	}
	if err := core.allow(ctx, caller, ratelimit.Record, len(batch)); err != nil {
		return wire.RecordInstrumentsResponse{}, err
	}
	ids, err := core.instrs.Record(ctx, batch)
	if err != nil {
		return wire.RecordInstrumentsResponse{}, err
	}
	return wire.RecordInstrumentsResponse{IDs: ids}, nil
}

func validateQuery(q wire.QueryInstrumentsRequest) (field, value string, limit int, token string, err error) {
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
func (core *Core) QueryInstruments(ctx context.Context, caller Caller, body wire.QueryInstrumentsRequest) (wire.QueryInstrumentsResponse, error) {
	field, value, limit, token, err := validateQuery(body)
	if err != nil {
		return wire.QueryInstrumentsResponse{}, err
	}
	if err := core.allow(ctx, caller, ratelimit.Query, 1); err != nil {
		return wire.QueryInstrumentsResponse{}, err
	}
	page, next, err := core.instrs.Query(ctx, field, value, limit, token)
	if err != nil {
		return wire.QueryInstrumentsResponse{}, err
	}
	if page == nil {
		page = []instruments.Instrument{}
	}
	return wire.QueryInstrumentsResponse{Instruments: page, NextPageToken: next}, nil
}

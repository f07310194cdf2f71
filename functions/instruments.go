package functions

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/instruments"
)

// maxInstrumentsBody fits 500 instruments with long names.
const maxInstrumentsBody = 1 << 20

// RecordInstrumentsRequest is the body of recordInstruments.
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

func (a *app) recordInstruments(w http.ResponseWriter, r *http.Request, req *httpapi.Request) (int, any, error) {
	var body RecordInstrumentsRequest
	if err := httpapi.DecodeJSON(w, r, maxInstrumentsBody, &body); err != nil {
		return 0, nil, err
	}
	batch, err := body.batch()
	if err != nil {
		return 0, nil, err
	}
	ids, err := a.instruments.Record(r.Context(), batch)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, RecordInstrumentsResponse{IDs: ids}, nil
}

// QueryInstrumentsResponse is a page of instruments, newest first.
type QueryInstrumentsResponse struct {
	Instruments   []instruments.Instrument `json:"instruments"`
	NextPageToken string                   `json:"next_page_token,omitempty"`
}

// instrumentsQuery validates queryInstruments' query string.
func instrumentsQuery(q url.Values) (field, value string, limit int, token string, err error) {
	if err := httpapi.CheckQuery(q, "field", "value", "limit", "page_token"); err != nil {
		return "", "", 0, "", err
	}
	limit = instruments.DefaultLimit
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil {
			return "", "", 0, "", errs.Invalid("limit", "must be an integer")
		}
	}
	field, value, token = q.Get("field"), q.Get("value"), q.Get("page_token")
	if err := instruments.ValidateQuery(field, value, limit); err != nil {
		return "", "", 0, "", err
	}
	return field, value, limit, token, nil
}

func (a *app) queryInstruments(w http.ResponseWriter, r *http.Request, req *httpapi.Request) (int, any, error) {
	field, value, limit, token, err := instrumentsQuery(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	page, next, err := a.instruments.Query(r.Context(), field, value, limit, token)
	if err != nil {
		return 0, nil, err
	}
	if page == nil {
		page = []instruments.Instrument{}
	}
	return http.StatusOK, QueryInstrumentsResponse{Instruments: page, NextPageToken: next}, nil
}

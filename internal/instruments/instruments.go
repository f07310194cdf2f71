// Package instruments holds the rules of the sharded-timestamps example
// (docs/instruments.md, after Firestore's page on sharded timestamps):
// price updates of financial instruments, written with a random shard and
// queried by one field, newest first. It knows nothing of storage
// (internal/store/instrumentstore keeps them) nor of HTTP.
package instruments

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/rfc3339"
)

// Limits of the HTTP contract.
const (
	MaxBatch     = 500
	MaxLimit     = 100
	DefaultLimit = 20
	maxText      = 128
)

// QueryFields are the fields queryInstruments filters on; each has a
// composite index in firestore.indexes.json.
var QueryFields = []string{"instrumentType", "exchange", "price.currency"}

// Price is an amount in millionths of a currency unit.
type Price struct {
	Currency string `json:"currency" firestore:"currency"`
	Micros   int64  `json:"micros" firestore:"micros"`
}

// Instrument is one stored price update.
type Instrument struct {
	ID             string    `json:"id" firestore:"-"`
	Symbol         string    `json:"symbol" firestore:"symbol"`
	Price          Price     `json:"price" firestore:"price"`
	Exchange       string    `json:"exchange" firestore:"exchange"`
	InstrumentType string    `json:"instrumentType" firestore:"instrumentType"`
	Timestamp      time.Time `json:"timestamp" firestore:"timestamp"`
}

// Input is an instrument as a client sends it; every field is required.
type Input struct {
	Symbol         *string     `json:"symbol"`
	Price          *PriceInput `json:"price"`
	Exchange       *string     `json:"exchange"`
	InstrumentType *string     `json:"instrumentType"`
	Timestamp      *string     `json:"timestamp"` // RFC 3339
}

// PriceInput is a price as a client sends it.
type PriceInput struct {
	Currency *string `json:"currency"`
	Micros   *int64  `json:"micros"`
}

// ValidateBatch checks a request's instruments: 1 to MaxBatch, each
// valid.
func ValidateBatch(ins []Input) ([]Instrument, error) {
	if n := len(ins); n < 1 || n > MaxBatch {
		return nil, errs.Invalid("instruments", "must hold 1 to %d instruments, got %d", MaxBatch, n)
	}
	out := make([]Instrument, len(ins))
	for i, in := range ins {
		v, err := in.Validate(i)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Validate checks in, the i-th instrument of a request, and returns it.
// Firestore keeps microseconds, so the timestamp is cut to them here and
// what is stored is what queries return.
func (in Input) Validate(i int) (Instrument, error) {
	at := func(field string) string { return fmt.Sprintf("instruments[%d].%s", i, field) }
	var out Instrument
	for _, f := range []struct {
		name string
		src  *string
		dst  *string
	}{
		{"symbol", in.Symbol, &out.Symbol},
		{"exchange", in.Exchange, &out.Exchange},
		{"instrumentType", in.InstrumentType, &out.InstrumentType},
	} {
		if err := text(at(f.name), f.src); err != nil {
			return Instrument{}, err
		}
		*f.dst = *f.src
	}
	if in.Price == nil {
		return Instrument{}, errs.Invalid(at("price"), "is required")
	}
	if c := in.Price.Currency; c == nil || !isCurrency(*c) {
		return Instrument{}, errs.Invalid(at("price.currency"), "must be a 3-letter ISO 4217 code such as \"USD\"")
	}
	out.Price.Currency = *in.Price.Currency
	if in.Price.Micros == nil || *in.Price.Micros < 0 {
		return Instrument{}, errs.Invalid(at("price.micros"), "must be an integer >= 0")
	}
	out.Price.Micros = *in.Price.Micros
	if in.Timestamp == nil {
		return Instrument{}, errs.Invalid(at("timestamp"), "is required")
	}
	t, err := rfc3339.Parse(at("timestamp"), *in.Timestamp)
	if err != nil {
		return Instrument{}, err
	}
	// Firestore stores UTC, so the range is checked after conversion: an
	// offset can move a time in year 1 or 9999 out of it.
	t = t.UTC().Truncate(time.Microsecond)
	if t.Year() < 1 || t.Year() > 9999 {
		return Instrument{}, errs.Invalid(at("timestamp"), "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z")
	}
	out.Timestamp = t
	return out, nil
}

func text(field string, s *string) error {
	switch {
	case s == nil || *s == "":
		return errs.Invalid(field, "is required")
	case len(*s) > maxText:
		return errs.Invalid(field, "must be at most %d bytes", maxText)
	case !utf8.ValidString(*s):
		return errs.Invalid(field, "must be valid UTF-8")
	}
	return nil
}

func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range 3 {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// ValidateQuery checks a query's field, value and limit.
func ValidateQuery(field, value string, limit int) error {
	if !slices.Contains(QueryFields, field) {
		return errs.Invalid("field", "must be one of instrumentType, exchange, price.currency")
	}
	if err := text("value", &value); err != nil {
		return err
	}
	if limit < 1 || limit > MaxLimit {
		return errs.Invalid("limit", "must be between 1 and %d", MaxLimit)
	}
	return nil
}

// Package instruments is seed 003's example of sharded timestamps: price
// updates of financial instruments in the "instruments" collection, written
// with a random shard and queried by one field, newest first.
package instruments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/shardedts"
)

// Limits of the HTTP contract.
const (
	CollectionName = "instruments"
	MaxBatch       = 500
	MaxLimit       = 100
	DefaultLimit   = 20
	maxText        = 128
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
	t, err := time.Parse(time.RFC3339Nano, *in.Timestamp)
	if err != nil || t.Year() < 1 {
		return Instrument{}, errs.Invalid(at("timestamp"), "must be an RFC 3339 time such as \"2019-01-01T13:45:23.010Z\"")
	}
	out.Timestamp = t.UTC().Truncate(time.Microsecond)
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

// Store keeps instruments in a sharded-timestamp collection.
type Store struct {
	coll *shardedts.Collection
}

// NewStore returns the instruments collection of client with numShards
// shard values; secret signs page tokens.
func NewStore(client *firestore.Client, numShards int, secret []byte) *Store {
	return &Store{coll: shardedts.New(client, CollectionName, numShards, secret)}
}

// Collection returns the underlying sharded collection.
func (s *Store) Collection() *shardedts.Collection { return s.coll }

// Record stores a batch in one commit and returns the new ids in order.
func (s *Store) Record(ctx context.Context, batch []Instrument) ([]string, error) {
	docs := make([]map[string]any, len(batch))
	for i, in := range batch {
		docs[i] = map[string]any{
			"symbol":            in.Symbol,
			"price":             map[string]any{"currency": in.Price.Currency, "micros": in.Price.Micros},
			"exchange":          in.Exchange,
			"instrumentType":    in.InstrumentType,
			shardedts.TimeField: in.Timestamp,
		}
	}
	return s.coll.Create(ctx, docs)
}

// Query returns a page of instruments whose field equals value, newest
// first, and the token of the next page ("" on the last).
func (s *Store) Query(ctx context.Context, field, value string, limit int, token string) ([]Instrument, string, error) {
	page, err := s.coll.Query(ctx, shardedts.Filter{Field: field, Value: value}, limit, token)
	if errors.Is(err, shardedts.ErrBadToken) {
		return nil, "", errs.Invalid("page_token", "is invalid, or was issued for another field or value")
	}
	if err != nil {
		return nil, "", err
	}
	out := make([]Instrument, len(page.Docs))
	for i, d := range page.Docs {
		if err := d.DataTo(&out[i]); err != nil {
			return nil, "", fmt.Errorf("instruments: decode %s: %w", d.Ref.Path, err)
		}
		out[i].ID = d.Ref.ID
	}
	return out, page.NextToken, nil
}

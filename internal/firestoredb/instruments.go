package firestoredb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/shardedts"
)

// InstrumentsCollection is the collection of seed 003's example.
const InstrumentsCollection = "instruments"

// Instruments keeps instruments in a sharded-timestamp collection.
type Instruments struct {
	db   *DB
	coll *shardedts.Collection
}

// NewInstruments returns the instruments collection with numShards shard
// values; secret signs page tokens.
func NewInstruments(db *DB, numShards int, secret []byte) *Instruments {
	return &Instruments{db: db, coll: shardedts.New(db.client.Collection(InstrumentsCollection), numShards, secret)}
}

// Collection returns the sharded collection, whose Plan the index check
// reads.
func (s *Instruments) Collection() *shardedts.Collection { return s.coll }

// Record stores a batch in one commit, each instrument with a random shard
// value and a new id, and returns the ids in order.
func (s *Instruments) Record(ctx context.Context, batch []instruments.Instrument) ([]string, error) {
	ids := make([]string, len(batch))
	writes := make([]*pb.Write, len(batch))
	for i, in := range batch {
		ref := s.coll.Ref().NewDoc()
		ids[i] = ref.ID
		writes[i] = createWrite(ref.Path, map[string]*pb.Value{
			"symbol": stringValue(in.Symbol),
			"price": mapValue(map[string]*pb.Value{
				"currency": stringValue(in.Price.Currency),
				"micros":   intValue(in.Price.Micros),
			}),
			"exchange":           stringValue(in.Exchange),
			"instrumentType":     stringValue(in.InstrumentType),
			shardedts.TimeField:  timeValue(in.Timestamp),
			shardedts.ShardField: stringValue(s.coll.RandomShard()),
		})
	}
	if _, err := s.db.commit(ctx, writes...); err != nil {
		return nil, classify(err, fmt.Sprintf("record %d instruments", len(batch)))
	}
	return ids, nil
}

// Query returns a page of instruments whose field equals value, newest
// first, and the token of the next page ("" on the last).
func (s *Instruments) Query(ctx context.Context, field, value string, limit int, token string) ([]instruments.Instrument, string, error) {
	f := shardedts.Filter{Field: field, Value: value}
	queries, err := s.coll.Plan(f, limit, token)
	if errors.Is(err, shardedts.ErrBadToken) {
		return nil, "", errs.Invalid("page_token", "is invalid, or was issued for another field or value")
	}
	if err != nil {
		return nil, "", err
	}
	results := make([][]*firestore.DocumentSnapshot, len(queries))
	errors := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() { results[i], errors[i] = s.db.snapshots(ctx, q) })
	}
	wg.Wait()
	for _, err := range errors {
		if err != nil {
			return nil, "", classify(err, "query instruments")
		}
	}
	page, err := s.coll.Page(f, limit, results)
	if err != nil {
		return nil, "", err
	}
	out := make([]instruments.Instrument, len(page.Docs))
	for i, d := range page.Docs {
		if err := d.DataTo(&out[i]); err != nil {
			return nil, "", fmt.Errorf("firestoredb: decode %s: %w", d.Ref.Path, err)
		}
		out[i].ID = d.Ref.ID
	}
	return out, page.NextToken, nil
}

// Package instrumentstore keeps the instruments of the sharded-timestamps
// example (docs/instruments.md): a collection whose
// documents carry a random shard value beside their timestamp, so writes
// spread over index ranges, and queries that merge one page per chunk of
// shard values.
package instrumentstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/shardedts"
)

// QueryReads bounds what one Query reads: a page (and one more) from each
// chunk of at most shardedts.MaxIn shard values.
const QueryReads = (counter.MaxShards + shardedts.MaxIn - 1) / shardedts.MaxIn * (instruments.MaxLimit + 1)

// Store keeps instruments in a sharded-timestamp collection.
type Store struct {
	db   *fs.DB
	coll *shardedts.Collection
}

// New returns the instruments collection with numShards shard values;
// secret signs page tokens.
func New(db *fs.DB, numShards int, secret []byte) *Store {
	return &Store{db: db, coll: shardedts.New(db.Collection(dm.Instruments), numShards, secret)}
}

// Collection returns the sharded collection, whose Plan the index check
// reads.
func (s *Store) Collection() *shardedts.Collection { return s.coll }

// Record stores a batch in one commit, each instrument with a random shard
// value and a new id, and returns the ids in order.
func (s *Store) Record(ctx context.Context, batch []instruments.Instrument) ([]string, error) {
	ids := make([]string, len(batch))
	writes := make([]*pb.Write, len(batch))
	for i, in := range batch {
		ref := s.coll.Ref().NewDoc()
		ids[i] = ref.ID
		writes[i] = fs.CreateWrite(ref.Path, map[string]*pb.Value{
			"symbol": fs.StringValue(in.Symbol),
			"price": fs.MapValue(map[string]*pb.Value{
				"currency": fs.StringValue(in.Price.Currency),
				"micros":   fs.IntValue(in.Price.Micros),
			}),
			"exchange":           fs.StringValue(in.Exchange),
			"instrumentType":     fs.StringValue(in.InstrumentType),
			shardedts.TimeField:  fs.TimeValue(in.Timestamp),
			shardedts.ShardField: fs.StringValue(s.coll.RandomShard()),
		})
	}
	if _, err := s.db.Commit(ctx, writes...); err != nil {
		return nil, fs.Classify(err, fmt.Sprintf("record %d instruments", len(batch)))
	}
	return ids, nil
}

// Query returns a page of instruments whose field equals value, newest
// first, and the token of the next page ("" on the last).
func (s *Store) Query(ctx context.Context, field, value string, limit int, token string) ([]instruments.Instrument, string, error) {
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
		wg.Go(func() { results[i], errors[i] = s.db.Snapshots(ctx, q) })
	}
	wg.Wait()
	for _, err := range errors {
		if err != nil {
			return nil, "", fs.Classify(err, "query instruments")
		}
	}
	page, err := s.coll.Page(f, limit, results)
	if err != nil {
		return nil, "", err
	}
	out := make([]instruments.Instrument, len(page.Docs))
	for i, d := range page.Docs {
		if err := d.DataTo(&out[i]); err != nil {
			return nil, "", fmt.Errorf("instrumentstore: decode %s: %w", d.Ref.Path, err)
		}
		out[i].ID = d.Ref.ID
	}
	return out, page.NextToken, nil
}

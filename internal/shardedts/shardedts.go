// Package shardedts implements sharded timestamps on a Firestore collection.
//
// Firestore sustains about 500 writes per second on a collection whose
// documents carry a monotonically increasing indexed field such as a
// timestamp, because neighbouring index entries land on one tablet. Giving
// each document a random "shard" value and indexing (shard, …, timestamp)
// spreads the entries over one range per shard, so the collection takes about
// 500 writes per second per shard value. Queries then run once per chunk of
// at most 30 shard values ("in" accepts 30) and the results are merged
// newest first, ties broken by document id.
//
// Only shard when the sustained write rate is above ~500/s: below it this is
// a premature optimisation that costs a fan-out on every read.
package shardedts

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
)

// Field names the package adds to and orders documents by.
const (
	ShardField = "shard"
	TimeField  = "timestamp"
)

// MaxIn is the most values Firestore accepts in one "in" filter.
const MaxIn = 30

// Collection is a collection with sharded timestamps.
type Collection struct {
	client *firestore.Client
	coll   *firestore.CollectionRef
	shards []string
	tokens *tokenCodec
}

// New returns the collection name of client with numShards shard values
// "0" … "numShards-1". secret signs page tokens.
func New(client *firestore.Client, name string, numShards int, secret []byte) *Collection {
	return &Collection{client: client, coll: client.Collection(name), shards: shardValues(numShards), tokens: &tokenCodec{key: secret}}
}

func shardValues(n int) []string {
	shards := make([]string, n)
	for i := range shards {
		shards[i] = strconv.Itoa(i)
	}
	return shards
}

// Shards returns the shard values.
func (c *Collection) Shards() []string { return c.shards }

// RandomShard picks the shard value of a new document.
func (c *Collection) RandomShard() string { return c.shards[rand.IntN(len(c.shards))] }

// Chunks splits the shard values into the fewest groups of at most MaxIn.
func (c *Collection) Chunks() [][]string { return slices.Collect(slices.Chunk(c.shards, MaxIn)) }

// Create writes docs in one commit, each with a random shard value and an
// automatic id, and returns the ids in order. Each doc must hold TimeField.
func (c *Collection) Create(ctx context.Context, docs []map[string]any) ([]string, error) {
	refs := make([]*firestore.DocumentRef, len(docs))
	for i := range refs {
		refs[i] = c.coll.NewDoc()
	}
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		for i, d := range docs {
			withShard := make(map[string]any, len(d)+1)
			for k, v := range d {
				withShard[k] = v
			}
			withShard[ShardField] = c.RandomShard()
			if err := tx.Create(refs[i], withShard); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("shardedts: create %d documents: %w", len(docs), err)
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return ids, nil
}

// Filter is the equality a query selects documents by.
type Filter struct {
	Field string // a field path, e.g. "price.currency"
	Value any
}

// Page is one page of a query, newest first.
type Page struct {
	Docs []*firestore.DocumentSnapshot
	// NextToken resumes after the last document; empty on the last page.
	NextToken string
}

// Query returns up to limit documents matching f, newest first (ties by
// document id, descending), after the position in token ("" for the first
// page). A token that was tampered with or issued for another filter is
// rejected with ErrBadToken.
func (c *Collection) Query(ctx context.Context, f Filter, limit int, token string) (Page, error) {
	queries, err := c.Plan(f, limit, token)
	if err != nil {
		return Page{}, err
	}
	results := make([][]*firestore.DocumentSnapshot, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() { results[i], errs[i] = q.Documents(ctx).GetAll() })
	}
	wg.Wait()
	var all []*firestore.DocumentSnapshot
	for i := range queries {
		if errs[i] != nil {
			return Page{}, fmt.Errorf("shardedts: query %s: %w", c.coll.ID, errs[i])
		}
		all = append(all, results[i]...)
	}
	slices.SortFunc(all, newestFirst)

	page := Page{Docs: all[:min(limit, len(all))]}
	if len(all) > limit {
		last := page.Docs[len(page.Docs)-1]
		at, err := timeOf(last)
		if err != nil {
			return Page{}, err
		}
		page.NextToken = c.tokens.encode(cursor{at: at, id: last.Ref.ID}, f)
	}
	return page, nil
}

// Plan returns the queries Query runs, one per chunk of shard values: the
// single place queries are built, so tests can check them against the
// index definitions.
func (c *Collection) Plan(f Filter, limit int, token string) ([]firestore.Query, error) {
	var after *cursor
	if token != "" {
		cur, err := c.tokens.decode(token, f)
		if err != nil {
			return nil, err
		}
		after = &cur
	}
	var queries []firestore.Query
	for _, chunk := range c.Chunks() {
		q := c.coll.Where(ShardField, "in", chunk).
			Where(f.Field, "==", f.Value).
			OrderBy(TimeField, firestore.Desc).
			OrderBy(firestore.DocumentID, firestore.Desc).
			// One more than asked tells whether another page exists.
			Limit(limit + 1)
		if after != nil {
			q = q.StartAfter(after.at, after.id)
		}
		queries = append(queries, q)
	}
	return queries, nil
}

// newestFirst orders by timestamp, then document id, both descending: the
// order of the queries, so the merge agrees with each chunk's result.
func newestFirst(a, b *firestore.DocumentSnapshot) int {
	ta, _ := timeOf(a)
	tb, _ := timeOf(b)
	if c := tb.Compare(ta); c != 0 {
		return c
	}
	return cmp.Compare(b.Ref.ID, a.Ref.ID)
}

func timeOf(d *firestore.DocumentSnapshot) (time.Time, error) {
	v, err := d.DataAt(TimeField)
	if err != nil {
		return time.Time{}, fmt.Errorf("shardedts: %s: %w", d.Ref.Path, err)
	}
	t, ok := v.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("shardedts: %s: %s is %T, not a timestamp", d.Ref.Path, TimeField, v)
	}
	return t, nil
}

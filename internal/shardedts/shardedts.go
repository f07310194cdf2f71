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
//
// The package plans and merges; it does no I/O. Plan returns the queries to
// run and Page merges their results into one page and the next page's token
// (internal/firestoredb runs them).
package shardedts

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
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
	coll   *firestore.CollectionRef
	shards []string
	tokens *tokenCodec
}

// New returns coll with numShards shard values "0" … "numShards-1"; secret
// signs page tokens.
func New(coll *firestore.CollectionRef, numShards int, secret []byte) *Collection {
	return &Collection{coll: coll, shards: Values(numShards), tokens: &tokenCodec{key: secret}}
}

// Values are the shard values of n shards: "0" … "n-1".
func Values(n int) []string {
	shards := make([]string, n)
	for i := range shards {
		shards[i] = strconv.Itoa(i)
	}
	return shards
}

// Ref returns the collection.
func (c *Collection) Ref() *firestore.CollectionRef { return c.coll }

// Shards returns the shard values.
func (c *Collection) Shards() []string { return c.shards }

// RandomShard picks the shard value of a new document.
func (c *Collection) RandomShard() string { return c.shards[rand.IntN(len(c.shards))] }

// Chunks splits the shard values into the fewest groups of at most MaxIn.
func (c *Collection) Chunks() [][]string { return slices.Collect(slices.Chunk(c.shards, MaxIn)) }

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

// Plan returns the queries of one page of documents matching f, newest
// first (ties by document id, descending), after the position in token (""
// for the first page): one query per chunk of shard values. It is the
// single place queries are built, so tests check them against the index
// definitions. A token that was tampered with, was issued for another
// filter or holds a position Firestore cannot take is ErrBadToken.
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

// Page merges the results of Plan's queries into one page of at most limit
// documents, and the token of the next page.
func (c *Collection) Page(f Filter, limit int, results [][]*firestore.DocumentSnapshot) (Page, error) {
	all := slices.Concat(results...)
	for _, d := range all {
		if _, err := timeOf(d); err != nil {
			return Page{}, err
		}
	}
	slices.SortFunc(all, newestFirst)
	page := Page{Docs: all[:min(limit, len(all))]}
	if len(all) > limit {
		last := page.Docs[len(page.Docs)-1]
		at, _ := timeOf(last)
		page.NextToken = c.tokens.encode(cursor{at: at, id: last.Ref.ID}, f)
	}
	return page, nil
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

package firestoredb

import (
	"context"
	"sync/atomic"

	"github.com/shardcount/shardcount/internal/ledger"
)

// Ops counts the Firestore operations made under one label.
type Ops struct {
	Commits       atomic.Int64 // commits sent
	FailedCommits atomic.Int64 // of which failed
	Writes        atomic.Int64 // writes of the commits that succeeded (billed)
	WrittenBytes  atomic.Int64 // their size as sent (proto: names, fields, masks, preconditions)
	Reads         atomic.Int64 // documents read or requested (billed)
	Aggregations  atomic.Int64 // aggregation queries
}

// OpCounts is a snapshot of Ops.
type OpCounts struct {
	Commits       int64 `json:"commits"`
	FailedCommits int64 `json:"failed_commits"`
	Writes        int64 `json:"writes"`
	WrittenBytes  int64 `json:"written_bytes"`
	Reads         int64 `json:"reads"`
	Aggregations  int64 `json:"aggregations"`
}

func (db *DB) ops(ctx context.Context) *Ops {
	label := ledger.Label(ctx)
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	o := db.stats[label]
	if o == nil {
		o = &Ops{}
		db.stats[label] = o
	}
	return o
}

// read counts n documents read under ctx's label, and on the request's
// ledger.
func (db *DB) read(ctx context.Context, n int) {
	db.ops(ctx).Reads.Add(int64(n))
	ledger.Read(ctx, n)
}

// Stats returns the operations counted so far, by label.
func (db *DB) Stats() map[string]OpCounts {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	out := make(map[string]OpCounts, len(db.stats))
	for label, o := range db.stats {
		out[label] = OpCounts{o.Commits.Load(), o.FailedCommits.Load(), o.Writes.Load(), o.WrittenBytes.Load(), o.Reads.Load(), o.Aggregations.Load()}
	}
	return out
}

package shared

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// SketchesQuery is distinct counter id's shards' sketches of its buckets
// of g from first to last.
func SketchesQuery(db *fs.DB, id string, g windows.Granularity, first, last time.Time) firestore.Query {
	return db.Collection(dm.UnderCounter(id, dm.Sketches)).
		Where(dm.FieldGranularity, "==", string(g)).
		Where(dm.FieldStart, ">=", first).Where(dm.FieldStart, "<=", last).
		OrderBy(dm.FieldStart, firestore.Asc)
}

// BucketEstimate is the estimate of distinct counter id's users in its
// bucket b, its shards' sketches of b merged, as of at (zero: now): one
// query, a read a sketch that exists.
func BucketEstimate(ctx context.Context, db *fs.DB, id string, b windows.Bucket, at time.Time) (int64, error) {
	docs, _, err := db.QueryAt(ctx, SketchesQuery(db, id, b.G, b.Start, b.Start), at)
	if err != nil {
		return 0, fs.Classify(err, "read the sketches of "+id)
	}
	union := distinct.New()
	for _, pd := range docs {
		sk, err := SketchOf(pd)
		if err == nil {
			err = union.Merge(sk)
		}
		if err != nil {
			return 0, err
		}
	}
	return union.Estimate(), nil
}

package shared

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/errs"
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

// SketchesByStart are distinct counter id's users in each bucket of g
// from first to last that holds sketches, by start (UTC): its shards'
// sketches of it merged, as of at (zero: now). One query, a read a sketch
// that exists; a sketch that does not decode is DATA_LOSS.
func SketchesByStart(ctx context.Context, db *fs.DB, id string, g windows.Granularity, first, last, at time.Time) (map[time.Time]*distinct.Sketch, error) {
	docs, _, err := db.QueryAt(ctx, SketchesQuery(db, id, g, first, last), at)
	if err != nil {
		return nil, fs.Classify(err, "read the sketches of "+id)
	}
	out := map[time.Time]*distinct.Sketch{}
	for _, pd := range docs {
		sk, err := SketchOf(pd)
		start := fs.DocOf(pd).Time(dm.FieldStart).UTC()
		if out[start] == nil {
			out[start] = distinct.New()
		}
		if err == nil {
			if err = out[start].Merge(sk); err != nil {
				err = errs.Wrap(errs.DataLoss, err, "%s does not merge", pd.GetName())
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

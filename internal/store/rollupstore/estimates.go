package rollupstore

import (
	"context"
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// estimateWrites set distinct counter c's hours and days reached from
// since (windows.Calendar.Reached) to the estimate of their users as of the
// roll-up's read time, c.AsOf (each bucket's shards' sketches merged):
// rankings of an hour or a day order them by it, as history answers it.
// A query a granularity, a read a sketch that exists in its span; a
// bucket nobody viewed, or past its retention, is not written. A sketch
// that does not decode (written outside the functions) leaves its
// granularity's buckets as they were, logged, rather than stop the
// counter's roll-ups.
func (s *Store) estimateWrites(ctx context.Context, c counter.Counter, since time.Time) ([]*pb.Write, error) {
	var writes []*pb.Write
	for _, span := range s.opts.Calendar.Reached(windows.Sketched, since, c.AsOf, s.opts.Settle) {
		byStart, err := shared.SketchesByStart(ctx, s.db, c.ID, span.G, span.First, span.Last, c.AsOf)
		if errs.Is(err, errs.DataLoss) {
			logging.FromContext(ctx).Error("a distinct counter's sketch does not decode: its buckets keep their estimates", "counter_id", c.ID, "granularity", string(span.G), "error", err.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, start := range slices.SortedFunc(maps.Keys(byStart), time.Time.Compare) {
			expireAt := s.opts.Windows.ExpireAt(s.opts.Calendar, span.G, start)
			if !expireAt.After(c.AsOf) {
				continue // its sketches go with its retention too
			}
			fields := map[string]*pb.Value{dm.FieldEstimate: fs.IntValue(byStart[start].Estimate()), dm.FieldExpireAt: fs.TimeValue(expireAt)}
			writes = append(writes, s.bucketWrite(c, span.G, start, nil, fields))
		}
	}
	return writes, nil
}

package rollupstore

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// estimateWrites set distinct counter c's buckets to the estimate of
// their users as of the roll-up's read time, c.AsOf (the sketches of the
// shards merged): rankings of an hour or a day order them by it, as
// history answers it; a bucket nobody viewed is not written. A query a
// bucket, a read a sketch that exists.
func (s *Store) estimateWrites(ctx context.Context, c counter.Counter, buckets []windows.Bucket) ([]*pb.Write, error) {
	var writes []*pb.Write
	for _, b := range buckets {
		n, err := shared.BucketEstimate(ctx, s.db, c.ID, b, c.AsOf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue // no sketches: nobody viewed it (the hour before, at a counter's start)
		}
		fields := map[string]*pb.Value{dm.FieldEstimate: fs.IntValue(n), dm.FieldExpireAt: fs.TimeValue(s.opts.Windows.ExpireAt(s.opts.Calendar, b.G, b.Start))}
		writes = append(writes, s.bucketWrite(c, b.G, b.Start, nil, fields))
	}
	return writes, nil
}

package incrementstore

import (
	"context"
	"time"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
)

// shardSketch is a distinct counter's shard as read before a commit: its
// sketch and the version it was read at (zero: no shard yet).
type shardSketch struct {
	sketch  *distinct.Sketch
	version time.Time
}

// readSketch reads the sketch of the batch's shard. The commit writes it
// back with the batch's members on the condition of this version, so an
// add of another instance meanwhile makes it read again: adds never undo
// each other.
func (s *Store) readSketch(ctx context.Context, b *increment.Batch) (*shardSketch, error) {
	docs, _, err := s.db.GetAll(ctx, []string{s.db.Name(dm.Shard(b.Counter.ID, b.Shard))}, time.Time{})
	if err != nil {
		return nil, fs.Classify(err, "read a sketch of "+b.Counter.ID)
	}
	out := &shardSketch{sketch: distinct.New()}
	if pd := docs[0]; pd != nil {
		d := fs.DocOf(pd)
		sk, err := distinct.Parse(d.Bytes(dm.FieldSketch))
		if err == nil {
			err = d.Err()
		}
		if err != nil {
			return nil, errs.Wrap(errs.DataLoss, err, "%s holds no sketch of this version", pd.GetName())
		}
		out.sketch, out.version = sk, pd.GetUpdateTime().AsTime()
	}
	return out, nil
}

// with is the sketch's bytes with members added.
func (s *shardSketch) with(members []string) []byte {
	for _, m := range members {
		s.sketch.Add(m)
	}
	return s.sketch.Bytes()
}

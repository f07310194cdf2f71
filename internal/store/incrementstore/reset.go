package incrementstore

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/shared"

	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/retry"
)

// ResetReads bounds what one Reset reads: the document and a SUM per
// attempt.
const ResetReads = 2 * retry.MaxAttempts

// Reset sets counter id's value to v as of a read time R: it reads the
// counter's document and sums its shards at R, then adds v − sum to one
// shard in one commit with a change of the document (reset_at), on the
// condition that the document is still the version read at R. So
// increments committed after R count on top and none is lost or counted
// twice, and of resets read at the same version one commits and the
// others read again: ten resets at once land once each, in turn. It
// returns R. The roll-up follows, like after any increment.
func (s *Store) Reset(ctx context.Context, id string, v int64) (time.Time, error) {
	if err := counter.ValidateResetValue(v); err != nil {
		return time.Time{}, err
	}
	var asOf time.Time
	_, resp, err := s.counters.Update(ctx, id, false, "reset counter", func(c counter.Counter, at time.Time) ([]*pb.Write, error) {
		if err := c.Mode.Resets(id); err != nil {
			return nil, err
		}
		sum, at, err := s.counters.Sum(ctx, id, at)
		if err != nil {
			return nil, err
		}
		asOf = at
		delta, ok := counter.Add(v, -sum)
		if !ok {
			return nil, errs.New(errs.DataLoss, "counter %q holds %d: the shards were written outside the functions", id, sum)
		}
		if delta == 0 {
			return nil, nil
		}
		stamp := fs.UpdateWrite(s.db.Name(dm.Counter(id)), nil, []string{}, c.Version)
		stamp.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldResetAt)}
		return []*pb.Write{stamp, s.base.ShardWrite(id, s.anyShard(c), shared.ShardChange{Count: delta, Commits: 1}), s.base.ActivityWrite(id, time.Time{})}, nil
	})
	if err != nil {
		return time.Time{}, err
	}
	if resp != nil {
		// What this instance knew of the value is off by the reset.
		s.known.Remove(id)
		if v, ok := fs.TransformResult(resp.GetWriteResults()[1], dm.FieldCount, shared.ShardFields); ok && counter.Saturated(v) {
			return time.Time{}, errs.New(errs.DataLoss, "a shard of counter %q reached int64's limit, so part of the reset may be lost: reset it again", id)
		}
	}
	return asOf, nil
}

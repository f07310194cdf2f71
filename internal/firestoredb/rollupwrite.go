package firestoredb

import (
	"context"
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/windows"
)

// WriteRollup is the roll-up's one write path, for the roll-up and
// reconcile alike: in one commit, the counter document's roll-up (count,
// rollup_as_of, the shard sums, the write rate; with Reshard the shard
// count too) if the document is still at r.Next.Version, r.Change added to
// the counter's minute, hour and day buckets of r.Next.AsOf (when windows
// are on), and r.Correct added to a shard. The precondition makes each
// bucket take each change exactly once, however often events are
// delivered. It returns the document's new version; ok is false if the
// document changed or is gone.
func (s *Rollups) WriteRollup(ctx context.Context, r counter.Rollup) (time.Time, bool, error) {
	c := r.Next
	fields := map[string]*pb.Value{
		fieldCount:        intValue(c.Count),
		fieldAsOf:         timeValue(c.AsOf),
		fieldShardCommits: intValue(c.Sums.Commits),
		fieldSlowCommits:  intValue(c.Sums.Slow),
		fieldWriteRate:    {ValueType: &pb.Value_DoubleValue{DoubleValue: c.WriteRate}},
	}
	if c.Legacy {
		fields[fieldOrigin], fields[fieldRanked] = stringValue(string(c.Origin)), boolValue(c.Ranked)
	}
	if r.Reshard {
		fields[fieldNumShards] = intValue(int64(c.NumShards))
		fields[fieldReshard] = reshardValue(c.Reshard)
	}
	// activity_as_of is in the mask always: without automatic sharding it
	// is deleted, so a later switch to on starts from a new baseline.
	mask := slices.Sorted(maps.Keys(fields))
	mask = append(mask, fieldActivityAsOf)
	if !c.ActivityAsOf.IsZero() {
		fields[fieldActivityAsOf] = timeValue(c.ActivityAsOf)
	}
	w := updateWrite(s.counterName(c.ID), fields, mask, c.Version)
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{{FieldPath: fieldRollups,
		TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: intValue(1)}}}
	writes := []*pb.Write{w}
	if r.Change != 0 && s.opts.Windows != nil {
		writes = append(writes, s.windowWrites(c, r.Change)...)
	}
	if r.Correct != 0 {
		writes = append(writes, s.shardWrite(c.ID, s.intn(c.ID, c.NumShards), shardChange{Count: r.Correct, Commits: 1}))
	}
	sent := s.now() // the cache's life starts with the commit, not its answer
	resp, err := s.db.commit(ctx, writes...)
	switch code(err) {
	case codes.OK:
		if r.Reshard {
			s.remember(c, sent)
		}
		return resp.GetWriteResults()[0].GetUpdateTime().AsTime(), true, nil
	case codes.FailedPrecondition, codes.NotFound:
		return time.Time{}, false, nil
	}
	return time.Time{}, false, classify(err, "write the roll-up of "+c.ID)
}

// windowWrites adds change to counter c's bucket of each granularity
// holding c.AsOf, creating it when missing; each bucket also says whether
// rankings may show it, as its counter does now.
func (s *Rollups) windowWrites(c counter.Counter, change int64) []*pb.Write {
	var writes []*pb.Write
	for _, g := range windows.All {
		start := g.Start(c.AsOf)
		fields := map[string]*pb.Value{
			fieldCounterID:   stringValue(c.ID),
			fieldGranularity: stringValue(string(g)),
			fieldStart:       timeValue(start),
			fieldExpireAt:    timeValue(s.opts.Windows.ExpireAt(g, start)),
			fieldRanked:      boolValue(c.Ranked),
		}
		if c.Kind != "" {
			fields[fieldKind] = stringValue(c.Kind)
		}
		// gross: what the roll-ups that added brought, a bound on any part
		// of the bucket's count (rolling windows rank by it).
		w := incrementWrite(s.windowName(c.ID, g, start), map[string]int64{fieldCount: change, fieldGross: max(change, 0)})
		w.GetUpdate().Fields = fields
		w.UpdateMask.FieldPaths = slices.Sorted(maps.Keys(fields))
		writes = append(writes, w)
	}
	return writes
}

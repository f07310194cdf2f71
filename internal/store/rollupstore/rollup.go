package rollupstore

import (
	"context"
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// WriteRollup is the roll-up's one write path, for the roll-up and
// reconcile alike: in one commit, the counter document's roll-up (count,
// rollup_as_of, the shard sums, the write rate; with Reshard the shard
// count too) if the document is still at r.Next.Version, r.Change added to
// the counter's minute, hour and day buckets of r.Next.AsOf (when windows
// are on), or a distinct counter's hours and days reached from
// r.EstimateSince set to their estimate, and r.Correct added to a shard. The precondition makes each
// bucket take each change exactly once, however often events are
// delivered. It returns the document's new version; ok is false if the
// document changed or is gone.
func (s *Store) WriteRollup(ctx context.Context, r counter.Rollup) (time.Time, bool, error) {
	c := r.Next
	fields := map[string]*pb.Value{
		dm.FieldCount:        fs.IntValue(c.Count),
		dm.FieldAsOf:         fs.TimeValue(c.AsOf),
		dm.FieldShardCommits: fs.IntValue(c.Sums.Commits),
		dm.FieldSlowCommits:  fs.IntValue(c.Sums.Slow),
		dm.FieldWriteRate:    {ValueType: &pb.Value_DoubleValue{DoubleValue: c.WriteRate}},
	}
	if c.Counts != nil { // a choice counter's
		fields[dm.FieldCounts] = shared.CountsValue(c.Counts)
	}
	if c.Legacy {
		fields[dm.FieldOrigin], fields[dm.FieldRanked] = fs.StringValue(string(c.Origin)), fs.BoolValue(c.Ranked)
	}
	if r.Reshard {
		fields[dm.FieldNumShards] = fs.IntValue(int64(c.NumShards))
		fields[dm.FieldReshard] = shared.ReshardValue(c.Reshard)
	}
	var peaks map[windows.Granularity]windows.Peak
	upgrade := c.Peaks == nil // the first roll-up since peaks are kept
	if (r.Change != 0 || r.Changes != nil) && s.opts.Windows != nil {
		changes := map[windows.Granularity]int64{}
		for _, g := range windows.Listed {
			changes[g] = r.Change // by 0 for a switch: its bucket is listed by carry all the same
			for choice, n := range r.Changes {
				changes[g.Of(choice)] = n
			}
		}
		var err error
		if peaks, err = s.peaks(ctx, c, changes); err != nil {
			return time.Time{}, false, err
		}
		if r.Change != 0 {
			c.Momentum = c.Momentum.Add(windows.RisingNow, c.AsOf, r.Change)
			fields[dm.FieldMomentum] = shared.MomentumValue(c.Momentum)
		}
		fields[dm.FieldPeaks] = shared.PeaksValue(merged(maps.Clone(c.Peaks), peaks))
	}
	// activity_as_of is in the mask always: without automatic sharding it
	// is deleted, so a later switch to on starts from a new baseline.
	mask := slices.Sorted(maps.Keys(fields))
	mask = append(mask, dm.FieldActivityAsOf)
	if !c.ActivityAsOf.IsZero() {
		fields[dm.FieldActivityAsOf] = fs.TimeValue(c.ActivityAsOf)
	}
	w := fs.UpdateWrite(s.db.Name(dm.Counter(c.ID)), fields, mask, c.Version)
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{{FieldPath: dm.FieldRollups,
		TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: fs.IntValue(1)}}}
	writes := []*pb.Write{w}
	if (r.Change != 0 || r.Changes != nil) && s.opts.Windows != nil {
		writes = append(writes, s.windowWrites(c, r.Change, r.Changes, peaks, upgrade)...)
		writes = append(writes, s.choiceWrites(c, r.Changes, peaks)...)
		writes = append(writes, s.closeWrites(c, r.Next.Peaks, peaks)...)
	}
	if !r.EstimateSince.IsZero() && s.opts.Windows != nil {
		estimates, err := s.estimateWrites(ctx, c, r.EstimateSince)
		if err != nil {
			return time.Time{}, false, err
		}
		writes = append(writes, estimates...)
	}
	if r.Correct != 0 || r.CorrectCounts != nil {
		writes = append(writes, s.base.ShardWrite(c.ID, s.base.IntN(c.ID, c.NumShards), shared.ShardChange{Count: r.Correct, Counts: r.CorrectCounts, Commits: 1}))
	}
	var mirror *pb.Write
	if r.MirrorPath != "" {
		var err error
		if mirror, err = s.mirrorWrite(ctx, c, r.MirrorPath, r.MirrorField); err != nil {
			return time.Time{}, false, err
		}
	}
	sent := s.base.Now() // the cache's life starts with the commit, not its answer
	all := writes
	if mirror != nil {
		all = append(slices.Clip(writes), mirror)
	}
	resp, err := s.db.Commit(ctx, all...)
	if mirror != nil && fs.Code(err) == codes.InvalidArgument {
		// The app's document takes no mirror (at its size limit, say): the
		// counter's own roll-up goes on without it, never stopped by it (a
		// refusal of its own writes is refused again, and answered).
		logging.FromContext(ctx).Error("the roll-up's commit with the mirrored count was refused; it is sent again without it", "document", r.MirrorPath, "error", err.Error())
		resp, err = s.db.Commit(ctx, writes...)
	}
	switch fs.Code(err) {
	case codes.OK:
		version := resp.GetWriteResults()[0].GetUpdateTime().AsTime()
		if r.Reshard {
			c.Version = version // the cache holds what the commit wrote
			s.opts.Remember(c, sent)
		}
		return version, true, nil
	case codes.FailedPrecondition, codes.NotFound:
		return time.Time{}, false, nil
	}
	return time.Time{}, false, fs.Classify(err, "write the roll-up of "+c.ID)
}

// peaks are counter c's peaks of granularities gs after changes (by
// granularity), changes of its buckets holding c.AsOf (windows.Peak.Add).
// A document written before peaks were kept has none, and one written
// before their count and carry were kept lacks those: they are read from
// the bucket holding c.AsOf (its count; its peaks, or the sum of what
// added to it, its gross, which bounds every part of it) and the bucket
// before (its peaks, or its gross), two reads a granularity, once per
// counter and bucket.
func (s *Store) peaks(ctx context.Context, c counter.Counter, changes map[windows.Granularity]int64) (map[windows.Granularity]windows.Peak, error) {
	cal := s.opts.Calendar
	var stale []windows.Granularity
	for g := range changes {
		if p, ok := c.Peaks[g]; !ok && c.Peaks == nil || ok && p.Start.Equal(cal.Start(g, c.AsOf)) && !p.Tracked {
			stale = append(stale, g)
		}
	}
	slices.Sort(stale)
	read := map[windows.Granularity]windows.Peak{}
	if len(stale) > 0 {
		var names []string
		for _, g := range stale {
			start := cal.Start(g, c.AsOf)
			names = append(names, s.db.Name(dm.Bucket(c.ID, g, start)), s.db.Name(dm.Bucket(c.ID, g, cal.Step(g, start, -1))))
		}
		docs, _, err := s.db.GetAll(ctx, names, time.Time{})
		if err != nil {
			return nil, fs.Classify(err, "read the buckets of "+c.ID)
		}
		for i, g := range stale {
			start := cal.Start(g, c.AsOf)
			current, before := fs.DocOf(docs[2*i]), fs.DocOf(docs[2*i+1])
			p := windows.Peak{Start: start, Count: current.Int(dm.FieldCount), Tracked: true}
			for slot := range p.Values {
				p.Carried[slot] = max(peakOf(before, slot), 0)
				if slot <= cal.Slot(g, start, c.AsOf) { // the slots begun so far
					p.Values[slot] = peakOf(current, slot)
				}
			}
			read[g] = p
		}
	}
	peaks := map[windows.Granularity]windows.Peak{}
	for g, change := range changes {
		before, ok := read[g]
		if !ok {
			before = c.Peaks[g]
		}
		peaks[g] = before.Add(cal, g, cal.Start(g, c.AsOf), c.AsOf, change)
	}
	return peaks, nil
}

// peakOf is a bucket's peak of slot: the larger of the one kept and the
// open one (a roll-up of the version before peaks were kept writes the
// latter only), or, of a bucket written before peaks, its gross (which
// bounds every part of it).
func peakOf(d *fs.Doc, slot int) int64 {
	switch {
	case d.Has(dm.FieldRun(slot)):
		return max(d.Int(dm.FieldRun(slot)), d.Int(dm.FieldPeak(slot)))
	case d.Has(dm.FieldPeak(slot)):
		return d.Int(dm.FieldPeak(slot))
	}
	return d.Int(dm.FieldGross)
}

// peakFields are a listed bucket's fields of p: its open peaks, the peaks
// kept and its carries (docs/design/windows.md).
func peakFields(fields map[string]*pb.Value, p windows.Peak) {
	for s, v := range p.Values {
		fields[dm.FieldPeak(s)] = fs.IntValue(p.Open(s))
		fields[dm.FieldRun(s)] = fs.IntValue(v)
		fields[dm.FieldCarry(s)] = fs.IntValue(p.Carry(s))
	}
}

// closeWrites close the buckets before those of peaks the counter's
// roll-ups have moved past, since before: their open peaks (and of an
// hour, its rise) are 0 from this commit on, so a ranking of a window
// starting in one finds the counter by its carry in the bucket after,
// which its changes there (likes taken back) bring down.
func (s *Store) closeWrites(c counter.Counter, before, peaks map[windows.Granularity]windows.Peak) []*pb.Write {
	var writes []*pb.Write
	for _, g := range slices.Sorted(maps.Keys(peaks)) {
		b, ok := before[g]
		if !ok || b.Start.Equal(peaks[g].Start) {
			continue
		}
		fields := map[string]*pb.Value{dm.FieldExpireAt: fs.TimeValue(s.opts.Windows.ExpireAt(s.opts.Calendar, g, b.Start))}
		for slot := range b.Values {
			fields[dm.FieldPeak(slot)] = fs.IntValue(0)
		}
		if g == windows.Hour {
			fields[dm.FieldRise] = &pb.Value{ValueType: &pb.Value_DoubleValue{}}
		}
		writes = append(writes, fs.SetFieldsWrite(s.db.Name(dm.Bucket(c.ID, g, b.Start)), fields))
	}
	return writes
}

// windowWrites adds change to counter c's bucket of each granularity
// holding c.AsOf (and a choice counter's changes to its counts),
// creating it when missing, and sets the listed ones' peak; each bucket
// also says whether rankings may show it, as its counter does now. On the upgrade, a bucket's gross, just read into its
// peak, is dropped; otherwise a gross is left alone: the code of before
// (a rolling deploy, a redelivered event) may still add to it, and a
// ranking bounds the bucket by its peak and gross together.
func (s *Store) windowWrites(c counter.Counter, change int64, changes map[string]int64, peaks map[windows.Granularity]windows.Peak, upgrade bool) []*pb.Write {
	deltas := map[string]int64{dm.FieldCount: change}
	for choice, n := range changes {
		deltas[dm.FieldCountOf(choice)] = n
	}
	var writes []*pb.Write
	for _, g := range windows.All {
		start := s.opts.Calendar.Start(g, c.AsOf)
		fields := map[string]*pb.Value{dm.FieldExpireAt: fs.TimeValue(s.opts.Windows.ExpireAt(s.opts.Calendar, g, start))}
		var deleted []string
		if g == windows.Hour && change != 0 {
			fields[dm.FieldRise] = &pb.Value{ValueType: &pb.Value_DoubleValue{DoubleValue: c.Momentum.Rise(windows.RisingNow)}}
		}
		if p, ok := peaks[g]; ok {
			peakFields(fields, p)
			if upgrade {
				deleted = append(deleted, dm.FieldGross) // it is in the peak
			}
		}
		writes = append(writes, s.bucketWrite(c, g, start, deltas, fields, deleted...))
	}
	return writes
}

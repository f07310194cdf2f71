package counterstore

import (
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// decode reads a counter document, refusing one the functions cannot have
// written (DATA_LOSS): everything downstream trusts it.
func decode(pd *pb.Document) (counter.Counter, error) {
	d := fs.DocOf(pd)
	r := d.Map(dm.FieldReshard)
	c := counter.Counter{
		ID: d.ID, NumShards: int(d.Int(dm.FieldNumShards)), Count: d.Int(dm.FieldCount), AsOf: d.Time(dm.FieldAsOf), Version: d.Updated,
		Sums:      counter.Sums{Count: d.Int(dm.FieldCount), Commits: d.Int(dm.FieldShardCommits), Slow: d.Int(dm.FieldSlowCommits)},
		WriteRate: d.Float(dm.FieldWriteRate), ActivityAsOf: d.Time(dm.FieldActivityAsOf),
		Reshard: counter.Reshard{From: int(r.Int("from")), To: int(r.Int("to")), At: r.Time("at"),
			MergeUntil: r.Time("merge_until"), MergedAt: r.Time("merged_at"), Reason: r.Str("reason")},
		Owner: d.Str(dm.FieldOwner), Unique: d.Bool(dm.FieldUnique), CreatedAt: d.Time(dm.FieldCreatedAt),
		MemberKinds: d.Bool(dm.FieldMemberKinds),
		Origin:      counter.Origin(d.Str(dm.FieldOrigin)), Kind: d.Str(dm.FieldKind), Ranked: d.Bool(dm.FieldRanked), ResetAt: d.Time(dm.FieldResetAt),
		Deleted: counter.Deletion{At: d.Time(dm.FieldDeletedAt), PurgeAfter: d.Time(dm.FieldPurgeAfter), Purged: d.Int(dm.FieldPurged)},
	}
	c.Choices, c.Distinct = d.Strings(dm.FieldChoices), d.Bool(dm.FieldDistinct)
	if counts := d.Map(dm.FieldCounts); c.Choices != nil {
		c.Counts = map[string]int64{}
		for _, choice := range c.Choices {
			c.Counts[choice] = counts.Int(choice)
		}
		c.Sums.Counts = c.Counts
		if err := counts.Err(); err != nil {
			return counter.Counter{}, errs.Wrap(errs.DataLoss, err, "counter %q has malformed counts", d.ID)
		}
	}
	m := d.Map(dm.FieldMomentum)
	c.Momentum = windows.Momentum{Hour: m.Time("hour"), Count: m.Int(dm.FieldCount), Rate: m.Float("rate"), Weight: m.Float("weight")}
	peaks := d.Map(dm.FieldPeaks)
	if d.Has(dm.FieldPeaks) {
		c.Peaks = map[windows.Granularity]windows.Peak{}
		for _, g := range peaks.Fields() {
			p := peaks.Map(g)
			peak := windows.Peak{Start: p.Time(dm.FieldStart)}
			for s := range peak.Values {
				peak.Values[s] = p.Int(dm.FieldPeak(s))
			}
			c.Peaks[windows.Granularity(g)] = peak
			if err := p.Err(); err != nil {
				return counter.Counter{}, errs.Wrap(errs.DataLoss, err, "counter %q has malformed peaks", d.ID)
			}
		}
	}
	if err := d.Err(r, peaks, m); err != nil {
		return counter.Counter{}, errs.Wrap(errs.DataLoss, err, "counter %q has a malformed document", d.ID)
	}
	if c.Origin == "" {
		// Before origins, a counter without an owner was an admin's, and
		// only an admin's counters are ranked unless an admin says so.
		c.Legacy, c.Origin = true, counter.ByUser
		if c.Owner == "" {
			c.Origin = counter.ByAdmin
		}
		c.Ranked = c.Origin == counter.ByAdmin
	}
	if c.NumShards < counter.MinShards || c.NumShards > counter.MaxShards {
		return counter.Counter{}, errs.New(errs.DataLoss, "counter %q has num_shards %d, not %d to %d: its document was written outside the functions",
			d.ID, c.NumShards, counter.MinShards, counter.MaxShards)
	}
	return c, nil
}

// fields are a new counter's document: c's settings, count 0.
func fields(c counter.Counter) map[string]*pb.Value {
	fields := map[string]*pb.Value{
		dm.FieldNumShards:   fs.IntValue(int64(c.NumShards)),
		dm.FieldCount:       fs.IntValue(0),
		dm.FieldRollups:     fs.IntValue(0),
		dm.FieldOwner:       fs.StringValue(c.Owner),
		dm.FieldUnique:      fs.BoolValue(c.Unique),
		dm.FieldOrigin:      fs.StringValue(string(c.Origin)),
		dm.FieldRanked:      fs.BoolValue(c.Ranked),
		dm.FieldPeaks:       PeaksValue(nil),    // none yet: its buckets hold nothing from before peaks
		dm.FieldMemberKinds: fs.BoolValue(true), // its member documents name their kind
	}
	if c.Kind != "" {
		fields[dm.FieldKind] = fs.StringValue(c.Kind)
	}
	if c.Distinct {
		fields[dm.FieldDistinct] = fs.BoolValue(true)
	}
	if c.Choices != nil {
		fields[dm.FieldChoices] = fs.StringsValue(c.Choices)
		fields[dm.FieldCounts] = CountsValue(nil)
	}
	return fields
}

// CountsValue is the counts field of a choice counter's document.
func CountsValue(counts map[string]int64) *pb.Value {
	m := map[string]*pb.Value{}
	for choice, n := range counts {
		m[choice] = fs.IntValue(n)
	}
	return fs.MapValue(m)
}

// ReshardValue is the reshard field of a counter document.
func ReshardValue(r counter.Reshard) *pb.Value {
	fields := map[string]*pb.Value{
		"from": fs.IntValue(int64(r.From)), "to": fs.IntValue(int64(r.To)),
		"at": fs.TimeValue(r.At), "reason": fs.StringValue(r.Reason),
	}
	if !r.MergeUntil.IsZero() {
		fields["merge_until"] = fs.TimeValue(r.MergeUntil)
	}
	if !r.MergedAt.IsZero() {
		fields["merged_at"] = fs.TimeValue(r.MergedAt)
	}
	return fs.MapValue(fields)
}

// MomentumValue is the momentum field of a counter document.
func MomentumValue(m windows.Momentum) *pb.Value {
	return fs.MapValue(map[string]*pb.Value{"hour": fs.TimeValue(m.Hour), dm.FieldCount: fs.IntValue(m.Count),
		"rate": {ValueType: &pb.Value_DoubleValue{DoubleValue: m.Rate}}, "weight": {ValueType: &pb.Value_DoubleValue{DoubleValue: m.Weight}}})
}

// PeaksValue is the peaks field of a counter document.
func PeaksValue(peaks map[windows.Granularity]windows.Peak) *pb.Value {
	m := map[string]*pb.Value{}
	for g, p := range peaks {
		fields := map[string]*pb.Value{dm.FieldStart: fs.TimeValue(p.Start)}
		for s, v := range p.Values {
			fields[dm.FieldPeak(s)] = fs.IntValue(v)
		}
		m[string(g)] = fs.MapValue(fields)
	}
	return fs.MapValue(m)
}

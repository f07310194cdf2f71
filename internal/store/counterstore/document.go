package counterstore

import (
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// decode reads a counter document, refusing one the functions cannot have
// written (DATA_LOSS): everything downstream trusts it. Its mode is decided
// here, once: the document's, and its kind's join_only.
func (s *Store) decode(pd *pb.Document) (counter.Counter, error) {
	d := fs.DocOf(pd)
	r := d.Map(dm.FieldReshard)
	c := counter.Counter{
		ID: d.ID, NumShards: int(d.Int(dm.FieldNumShards)), Count: d.Int(dm.FieldCount), AsOf: d.Time(dm.FieldAsOf), Version: d.Updated,
		Sums:      counter.Sums{Count: d.Int(dm.FieldCount), Commits: d.Int(dm.FieldShardCommits), Slow: d.Int(dm.FieldSlowCommits)},
		WriteRate: d.Float(dm.FieldWriteRate), ActivityAsOf: d.Time(dm.FieldActivityAsOf),
		Reshard: counter.Reshard{From: int(r.Int("from")), To: int(r.Int("to")), At: r.Time("at"),
			MergeUntil: r.Time("merge_until"), MergedAt: r.Time("merged_at"), Reason: r.Str("reason")},
		Owner: d.Str(dm.FieldOwner), CreatedAt: d.Time(dm.FieldCreatedAt),
		MemberKinds: d.Bool(dm.FieldMemberKinds),
		Origin:      counter.Origin(d.Str(dm.FieldOrigin)), Kind: d.Str(dm.FieldKind), Ranked: d.Bool(dm.FieldRanked), ResetAt: d.Time(dm.FieldResetAt),
		Deleted: counter.Deletion{At: d.Time(dm.FieldDeletedAt), PurgeAfter: d.Time(dm.FieldPurgeAfter), Purged: d.Int(dm.FieldPurged)},
	}
	c.Choices = d.Strings(dm.FieldChoices)
	c.Mode = counter.ModeOf(d.Bool(dm.FieldUnique), c.Choices, d.Bool(dm.FieldDistinct), s.opts.Kinds[c.Kind].JoinOnly)
	counts := d.Map(dm.FieldCounts)
	for _, choice := range c.Choices { // a choice counter's count of each
		if c.Counts == nil {
			c.Counts = map[string]int64{}
		}
		c.Counts[choice] = counts.Int(choice)
	}
	c.Sums.Counts = c.Counts
	if err := counts.Err(); err != nil && c.Counts != nil {
		return counter.Counter{}, errs.Wrap(errs.DataLoss, err, "counter %q has malformed counts", d.ID)
	}
	m := d.Map(dm.FieldMomentum)
	c.Momentum = windows.Momentum{Hour: m.Time("hour"), Count: m.Int(dm.FieldCount), Rate: m.Float("rate"), Weight: m.Float("weight")}
	peaks := d.Map(dm.FieldPeaks)
	if d.Has(dm.FieldPeaks) {
		c.Peaks = map[windows.Granularity]windows.Peak{}
		for _, g := range peaks.Fields() {
			p := peaks.Map(g)
			peak := windows.Peak{Start: p.Time(dm.FieldStart), Tracked: p.Has(dm.FieldCount), Count: p.Int(dm.FieldCount)}
			for s := range peak.Values {
				peak.Values[s], peak.Carried[s] = p.Int(dm.FieldPeak(s)), p.Int(dm.FieldCarried(s))
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
		dm.FieldUnique:      fs.BoolValue(c.Mode.Members()),
		dm.FieldOrigin:      fs.StringValue(string(c.Origin)),
		dm.FieldRanked:      fs.BoolValue(c.Ranked),
		dm.FieldPeaks:       shared.PeaksValue(nil), // none yet: its buckets hold nothing from before peaks
		dm.FieldMemberKinds: fs.BoolValue(true),     // its member documents name their kind
	}
	if c.Kind != "" {
		fields[dm.FieldKind] = fs.StringValue(c.Kind)
	}
	switch c.Mode { // the fields ModeOf decides it from, beside unique
	case counter.Distinct:
		fields[dm.FieldDistinct] = fs.BoolValue(true)
	case counter.Choice:
		fields[dm.FieldChoices] = fs.StringsValue(c.Choices)
		fields[dm.FieldCounts] = shared.CountsValue(nil)
	}
	return fields
}

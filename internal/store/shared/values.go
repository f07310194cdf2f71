package shared

import (
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// The values of a counter document's fields that the counters' store
// creates and the roll-up's rewrites.

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
		if p.Tracked {
			fields[dm.FieldCount] = fs.IntValue(p.Count)
			for s, v := range p.Carried {
				fields[dm.FieldCarried(s)] = fs.IntValue(v)
			}
		}
		m[string(g)] = fs.MapValue(fields)
	}
	return fs.MapValue(m)
}

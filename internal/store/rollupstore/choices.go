package rollupstore

import (
	"maps"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// choiceWrites adds a choice counter's changes by choice to each choice's
// own buckets (windows.Granularity.Of) holding c.AsOf, with their peaks,
// and to its all-time total (windows.AllTime), creating them when
// missing. Rankings of one choice (topCounters ?choice=) read them with
// the queries and indexes of any ranking: to those, a choice's buckets
// are of a granularity of their own.
func (s *Store) choiceWrites(c counter.Counter, changes map[string]int64, peaks map[windows.Granularity]windows.Peak) []*pb.Write {
	var writes []*pb.Write
	for _, choice := range slices.Sorted(maps.Keys(changes)) {
		for _, g := range append(slices.Clone(windows.All), windows.AllTime) {
			key, start := g.Of(choice), windows.AllTimeStart
			fields := map[string]*pb.Value{}
			if g != windows.AllTime {
				start = s.opts.Calendar.Start(key, c.AsOf)
				fields[dm.FieldExpireAt] = fs.TimeValue(s.opts.Windows.ExpireAt(s.opts.Calendar, key, start))
			}
			if p, ok := peaks[key]; ok {
				peakFields(fields, p)
			}
			writes = append(writes, s.bucketWrite(c, key, start, map[string]int64{dm.FieldCount: changes[choice]}, fields))
		}
	}
	return writes
}

// bucketWrite adds deltas to counter c's bucket of g starting at start,
// creating it when missing, with what every bucket says (whose counter,
// which bucket, whether rankings may show it) and fields, and deletes the
// fields deleted.
func (s *Store) bucketWrite(c counter.Counter, g windows.Granularity, start time.Time, deltas map[string]int64, fields map[string]*pb.Value, deleted ...string) *pb.Write {
	fields[dm.FieldCounterID] = fs.StringValue(c.ID)
	fields[dm.FieldGranularity] = fs.StringValue(string(g))
	fields[dm.FieldStart] = fs.TimeValue(start)
	fields[dm.FieldRanked] = fs.BoolValue(c.Ranked)
	if c.Kind != "" {
		fields[dm.FieldKind] = fs.StringValue(c.Kind)
	}
	w := fs.IncrementWrite(s.db.Name(dm.Bucket(c.ID, g, start)), deltas)
	w.GetUpdate().Fields = fields
	w.UpdateMask.FieldPaths = append(slices.Sorted(maps.Keys(fields)), deleted...)
	return w
}

// merged is into with from's entries (into may be nil).
func merged[K comparable, V any](into, from map[K]V) map[K]V {
	if into == nil {
		into = map[K]V{}
	}
	maps.Copy(into, from)
	return into
}

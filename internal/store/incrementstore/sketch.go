package incrementstore

import (
	"context"
	"strconv"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/distinct"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// sketched are the sketches a distinct counter's commit adds its members
// to, as read: its shard's, and that shard's of the hour and the day of
// the commit (with windows on).
type sketched struct {
	shard   read
	buckets []bucketRead
}

// read is a sketch as read, and the version of its document (zero: none
// yet); after add, its bytes to write back, or nil when the members left
// it as it was.
type read struct {
	sketch  *distinct.Sketch
	version time.Time
	write   []byte
}

// bucketRead is a bucket's sketch of the shard, as read.
type bucketRead struct {
	read
	g     windows.Granularity
	start time.Time
}

// homeShard is the shard a distinct counter's batch of one member's views
// goes to first, by the member's hash, so that a viewer who comes back
// alone finds themselves in the sketches read and writes nothing; false
// for a batch of several members, which goes to any shard at random, so
// that no member's shard takes more than its share, and for any other
// counter. Any shard takes any member: a lost race tries another.
func homeShard(c counter.Counter, ops []increment.Op) (int, bool) {
	if !c.Distinct {
		return 0, false
	}
	for _, op := range ops[1:] {
		if op.User != ops[0].User {
			return 0, false
		}
	}
	return int(distinct.Hash(ops[0].User) % uint64(c.NumShards)), true
}

// sketchedGranularities are the buckets a distinct counter keeps sketches
// of: a minute's would be a document a shard a minute.
var sketchedGranularities = []windows.Granularity{windows.Hour, windows.Day}

// readSketch reads the sketches of the batch's shard. The commit writes
// back each that its members change, on the condition of its version, so
// an add of another instance meanwhile makes it read again: adds never
// undo each other. A member lands in the hour and day of this instance's
// clock when it reads, which a commit at a bucket's edge may miss by its
// skew: sketches are approximate anyway.
func (s *Store) readSketch(ctx context.Context, b *increment.Batch) (*sketched, error) {
	id, k, now := b.Counter.ID, b.Shard, s.counters.Now()
	names := []string{s.db.Name(dm.Shard(id, k))}
	out := &sketched{}
	if s.opts.Windows != nil {
		for _, g := range sketchedGranularities {
			out.buckets = append(out.buckets, bucketRead{g: g, start: g.Start(now)})
			names = append(names, s.db.Name(dm.SketchBucket(id, g, g.Start(now), k)))
		}
	}
	docs, _, err := s.db.GetAll(ctx, names, time.Time{})
	if err != nil {
		return nil, fs.Classify(err, "read the sketches of "+id)
	}
	if out.shard, err = sketchOf(docs[0]); err != nil {
		return nil, err
	}
	for i := range out.buckets {
		if out.buckets[i].read, err = sketchOf(docs[i+1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sketchOf decodes a document's sketch (empty when there is none), with
// its version.
func sketchOf(pd *pb.Document) (read, error) {
	sk, err := counterstore.SketchOf(pd)
	if err != nil || pd == nil {
		return read{sketch: sk}, err
	}
	return read{sketch: sk, version: pd.GetUpdateTime().AsTime()}, nil
}

// add adds members to each sketch read, and reports whether any changed:
// only those are written back (up to 16 KB each), so viewers seen before
// cost a read and no write.
func (sk *sketched) add(members []string) (changed bool) {
	add := func(r *read) {
		if r.sketch.AddAll(members) {
			r.write, changed = r.sketch.Bytes(), true
		}
	}
	add(&sk.shard)
	for i := range sk.buckets {
		add(&sk.buckets[i].read)
	}
	return changed
}

// bucketSketchWrites write the hour and day sketches of the batch's shard
// that add changed, each on the condition of the version read.
func (s *Store) bucketSketchWrites(b *increment.Batch, sk *sketched) []*pb.Write {
	var writes []*pb.Write
	for _, bk := range sk.buckets {
		if bk.write == nil {
			continue
		}
		name := s.db.Name(dm.SketchBucket(b.Counter.ID, bk.g, bk.start, b.Shard))
		fields := map[string]*pb.Value{
			dm.FieldSketch: fs.BytesValue(bk.write), dm.FieldCounterID: fs.StringValue(b.Counter.ID),
			dm.FieldGranularity: fs.StringValue(string(bk.g)), dm.FieldStart: fs.TimeValue(bk.start),
			dm.FieldShard: fs.IntValue(int64(b.Shard)), dm.FieldExpireAt: fs.TimeValue(s.opts.Windows.ExpireAt(bk.g, bk.start)),
		}
		w := fs.CreateWrite(name, fields)
		if !bk.version.IsZero() {
			w = fs.UpdateWrite(name, fields, []string{dm.FieldSketch}, bk.version)
		}
		writes = append(writes, w)
	}
	return writes
}

// seenViewers splits a distinct counter's ops into those by viewers this
// instance knows its shards' sketches hold, all-time and in the current
// hour and day (by op, the shard that holds them), and the rest (their
// indexes). A sketch never forgets a member of its counter's incarnation,
// so a known viewer's view changes nothing anywhere: it is answered with
// no Firestore operation at all. An op with a key, or authorized on
// another incarnation, is never known.
func (s *Store) seenViewers(c counter.Counter, ops []increment.Op) (map[int]int, []int) {
	var seen map[int]int
	var rest []int
	if !c.Distinct {
		return nil, nil
	}
	now := s.counters.Now()
	var starts []time.Time
	if s.opts.Windows != nil {
		for _, g := range sketchedGranularities {
			starts = append(starts, g.Start(now))
		}
	}
	for i, op := range ops {
		if op.Key != "" || op.Delta != 1 || !increment.SameIncarnation(op.Counter, c) {
			rest = append(rest, i)
			continue
		}
		if k, ok := s.viewers.Get(viewerKey(c, starts, op.User)); ok {
			if seen == nil {
				seen = map[int]int{}
			}
			seen[i] = k
			continue
		}
		rest = append(rest, i)
	}
	return seen, rest
}

// noteViewers remembers that the sketches of the batch's shard, as read,
// hold members (a commit added them, or they were there).
func (s *Store) noteViewers(b *increment.Batch, sk *sketched, members []string) {
	if sk == nil {
		return
	}
	var starts []time.Time
	for _, bk := range sk.buckets {
		starts = append(starts, bk.start)
	}
	for _, m := range members {
		if key := viewerKey(b.Counter, starts, m); key != "" {
			s.viewers.Add(key, b.Shard)
		}
	}
}

// viewerKey names member of counter c's incarnation in the sketches of
// the buckets starting at starts ("" for a counter whose creation is not
// known yet: its key would outlive it).
func viewerKey(c counter.Counter, starts []time.Time, member string) string {
	if c.CreatedAt.IsZero() || c.Version.IsZero() {
		return ""
	}
	key := markKey(c) + "|" + strconv.FormatUint(distinct.Hash(member), 36)
	for _, t := range starts {
		key += "|" + strconv.FormatInt(t.Unix(), 36)
	}
	return key
}

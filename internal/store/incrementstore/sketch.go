package incrementstore

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/shared"

	"time"

	"github.com/shardcount/shardcount/internal/distinct"
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

// sketches commits the ops of a distinct counter: their members added to
// the sketches of a shard (its own, and that shard's of the hour and the
// day), each written back when they change it, on the condition of the
// version read.
type sketches struct {
	s  *Store
	sk *sketched // as the last read found them
}

// known are the ops by viewers this instance remembers in a shard's
// sketches, all-time and of the current hour and day: a sketch never
// forgets a member of its counter's incarnation, so their views change
// nothing anywhere (increment.KnownViewers).
func (m *sketches) known(c counter.Counter, ops []increment.Op) (map[int]int, []int) {
	return increment.KnownViewers(c, ops, m.s.sketchStarts(m.s.base.Now()), func(key string) (int, bool) {
		if key == "" {
			return 0, false
		}
		return m.s.viewers.Get(key)
	})
}

// shard is the viewer's own for one viewer's batch, else any
// (increment.HomeShard).
func (m *sketches) shard(c counter.Counter, ops []increment.Op) int {
	if k, ok := increment.HomeShard(c, ops); ok {
		return k
	}
	return m.s.anyShard(c)
}

func (m *sketches) read(ctx context.Context, b *increment.Batch) (map[string]increment.Membership, error) {
	var err error
	m.sk, err = m.s.readSketch(ctx, b)
	return nil, err
}

// unchanged: no sketch changes with the plan's members, and no key's
// record nor the counter's creation is written.
func (m *sketches) unchanged(plan increment.Plan) bool {
	return plan.Empty() || !m.sk.add(plan.Adds) && !plan.Creates && len(plan.Records) == 0
}

func (m *sketches) shardWrites(b *increment.Batch, change shared.ShardChange) (*pb.Write, []*pb.Write) {
	var shard *pb.Write
	if m.sk.shard.write != nil {
		shard = m.s.base.SketchWrite(b.Counter.ID, b.Shard, m.sk.shard.write, m.sk.shard.version, change)
	}
	return shard, m.s.bucketSketchWrites(b, m.sk)
}

func (m *sketches) lastWrites(*increment.Batch) []*pb.Write { return nil }

// landed remembers the viewers the shard's sketches hold now.
func (m *sketches) landed(b *increment.Batch, plan increment.Plan, _ *pb.CommitResponse) error {
	m.s.noteViewers(b, m.sk, plan.Adds)
	b.Committed(plan)
	return nil
}

// raced: any shard takes any member, so the next try goes to another,
// likely not the one just written.
func (m *sketches) raced(b *increment.Batch) { b.Shard = m.s.anyShard(b.Counter) }

func (m *sketches) recordFields(increment.Record) map[string]*pb.Value { return nil }

// readSketch reads the sketches of the batch's shard. The commit writes
// back each that its members change, on the condition of its version, so
// an add of another instance meanwhile makes it read again: adds never
// undo each other. A member lands in the hour and day of this instance's
// clock when it reads, which a commit at a bucket's edge may miss by its
// skew: sketches are approximate anyway.
func (s *Store) readSketch(ctx context.Context, b *increment.Batch) (*sketched, error) {
	id, k, now := b.Counter.ID, b.Shard, s.base.Now()
	names := []string{s.db.Name(dm.Shard(id, k))}
	out := &sketched{}
	if s.opts.Windows != nil {
		for _, g := range windows.Sketched {
			out.buckets = append(out.buckets, bucketRead{g: g, start: s.opts.Calendar.Start(g, now)})
			names = append(names, s.db.Name(dm.SketchBucket(id, g, s.opts.Calendar.Start(g, now), k)))
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
	sk, err := shared.SketchOf(pd)
	if err != nil || pd == nil {
		return read{sketch: sk}, err
	}
	return read{sketch: sk, version: pd.GetUpdateTime().AsTime()}, nil
}

// add adds members to each sketch read, and reports whether any changed:
// only those are written back (up to 16 KB each), so viewers seen before
// cost a read and no write. The shard's sketch is written back, as it
// was, when only an hour's or a day's changed (a viewer of before, back
// in a new hour): the shard's write is the event that rolls the counter
// up, which sets its buckets to their sketches' estimate.
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
	if changed && sk.shard.write == nil {
		sk.shard.write = sk.shard.sketch.Bytes()
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
			dm.FieldShard: fs.IntValue(int64(b.Shard)), dm.FieldExpireAt: fs.TimeValue(s.opts.Windows.ExpireAt(s.opts.Calendar, bk.g, bk.start)),
		}
		w := fs.CreateWrite(name, fields)
		if !bk.version.IsZero() {
			w = fs.UpdateWrite(name, fields, []string{dm.FieldSketch}, bk.version)
		}
		writes = append(writes, w)
	}
	return writes
}

// sketchStarts are the starts of the buckets a distinct counter keeps
// sketches of at now (none with windows off).
func (s *Store) sketchStarts(now time.Time) []time.Time {
	var starts []time.Time
	if s.opts.Windows != nil {
		for _, g := range windows.Sketched {
			starts = append(starts, s.opts.Calendar.Start(g, now))
		}
	}
	return starts
}

// noteViewers remembers that the sketches of the batch's shard, as read,
// hold members (a commit added them, or they were there).
func (s *Store) noteViewers(b *increment.Batch, sk *sketched, members []string) {
	var starts []time.Time
	for _, bk := range sk.buckets {
		starts = append(starts, bk.start)
	}
	for _, m := range members {
		if key := increment.ViewerKey(b.Counter, starts, m); key != "" {
			s.viewers.Add(key, b.Shard)
		}
	}
}

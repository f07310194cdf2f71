package incrementstore

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"

	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardcount/shardcount/internal/errs"
)

// readRecords reads the records of the pending keys after a commit lost
// a race.
func (s *Store) readRecords(ctx context.Context, b *increment.Batch) (map[int]*increment.Record, error) {
	keyed := b.Keyed()
	if len(keyed) == 0 {
		return nil, nil
	}
	names := make([]string, len(keyed))
	for j, i := range keyed {
		op := b.Ops()[i]
		names[j] = s.db.Name(dm.Key(b.Counter.ID, op.User, op.Key))
	}
	docs, _, err := s.db.GetAll(ctx, names, time.Time{})
	if err != nil {
		return nil, fs.Classify(err, "read idempotency keys of "+b.Counter.ID)
	}
	out := map[int]*increment.Record{}
	for j, pd := range docs {
		if pd == nil {
			continue
		}
		d := fs.DocOf(pd)
		r := &increment.Record{Delta: d.Int(dm.FieldDelta), Shard: int(d.Int(dm.FieldShard)), Member: d.Bool(dm.FieldMember),
			Changed: d.Bool(dm.FieldChanged), Choice: d.Str(dm.FieldChoice), Previous: d.Str(dm.FieldPrevious),
			ExpireAt: d.Time(dm.FieldExpireAt), Version: d.Updated}
		if err := d.Err(); err != nil {
			return nil, fmt.Errorf("incrementstore: decode %s: %w", pd.GetName(), err)
		}
		out[keyed[j]] = r
	}
	return out, nil
}

// recordWrite creates a key's record, or replaces an expired one: its
// delta, shard and expiry, and the fields its counter's mode keeps.
func (s *Store) recordWrite(c counter.Counter, k increment.KeyWrite, fields map[string]*pb.Value) *pb.Write {
	if fields == nil {
		fields = map[string]*pb.Value{}
	}
	fields[dm.FieldDelta], fields[dm.FieldShard], fields[dm.FieldExpireAt] =
		fs.IntValue(k.Record.Delta), fs.IntValue(int64(k.Record.Shard)), fs.TimeValue(k.Record.ExpireAt)
	name := s.db.Name(dm.Key(c.ID, k.User, k.Key))
	if !k.Replace.IsZero() {
		return fs.ReplaceWrite(name, fields, k.Replace)
	}
	return fs.CreateWrite(name, fields)
}

// reread follows a lost race of a creating commit: the counter was
// probably created meanwhile; read it, and go on as with any counter. One
// deleted meanwhile is NOT_FOUND.
func (s *Store) reread(ctx context.Context, b *increment.Batch) error {
	if !b.Creates() {
		return nil
	}
	id := b.Counter.ID
	c, err := s.counters.Stored(ctx, id)
	switch {
	case errs.Is(err, errs.NotFound):
		b.StillAbsent()
		return nil // still absent (dropped meanwhile): create it again
	case err != nil:
		return err
	case c.IsDeleted():
		return errs.New(errs.NotFound, "counter %q does not exist", id)
	}
	if c.NumShards != b.Counter.NumShards {
		b.Shard = s.anyShard(c) // created with other settings (by an admin)
	}
	b.Counter = c
	return nil
}

// markDue reports whether this instance's next commit to counter c marks
// it in the activity index: not for ActivityEvery since it last did. A
// counter is known by its id and creation, so one created again over a
// purged tombstone (whose marker went with it) is marked at once.
func (s *Store) markDue(c counter.Counter) bool {
	last, ok := s.marked.Get(c.Incarnation())
	return !ok || !s.base.Now().Before(last.Add(s.opts.ActivityEvery))
}

// noteMarked remembers that a commit marked counter c, from start (when
// the commit began: the marker's time is no earlier).
func (s *Store) noteMarked(c counter.Counter, start time.Time) { s.marked.Add(c.Incarnation(), start) }

// withTraceparent sets the shard write w's traceparent to sc, if valid
// (dm.FieldTraceparent), beside what w writes (a sketch); a write without
// a mask (a shard created) writes every field it holds.
func withTraceparent(w *pb.Write, sc trace.SpanContext) *pb.Write {
	if !sc.IsValid() {
		return w
	}
	u := w.GetUpdate()
	if u.Fields == nil {
		u.Fields = map[string]*pb.Value{}
	}
	u.Fields[dm.FieldTraceparent] = fs.StringValue("00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String())
	if w.UpdateMask != nil {
		w.UpdateMask.FieldPaths = append(w.UpdateMask.FieldPaths, dm.FieldTraceparent)
	}
	return w
}

package rollupstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/activity"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/rollup"
)

// SweepPage lists up to limit counters after the id after, in id order,
// deleted ones included.
func (s *Store) SweepPage(ctx context.Context, after string, limit int) ([]rollup.SweepEntry, error) {
	docs, err := s.db.Query(ctx, s.SweepQuery(after, limit))
	if err != nil {
		return nil, fs.Classify(err, "list counters")
	}
	out := make([]rollup.SweepEntry, len(docs))
	for i, d := range docs {
		_, deleted := d.GetFields()[dm.FieldDeletedAt]
		out[i] = rollup.SweepEntry{ID: fs.DocOf(d).ID, Deleted: deleted}
	}
	return out, nil
}

// SweepQuery is SweepPage's query.
func (s *Store) SweepQuery(after string, limit int) firestore.Query {
	q := s.db.Collection(dm.Counters).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q.Select(dm.FieldDeletedAt)
}

func (s *Store) cursorName() string { return s.db.Name(dm.ReconcileCursor()) }

// LoadReconcileCursor reads the sweep's cursor (zero before the first run).
func (s *Store) LoadReconcileCursor(ctx context.Context) (rollup.Cursor, error) {
	pd, err := s.db.Get(ctx, s.cursorName())
	if err != nil {
		return rollup.Cursor{}, fs.Classify(err, "read the reconcile cursor")
	}
	if pd == nil {
		return rollup.Cursor{}, nil
	}
	d := fs.DocOf(pd)
	c := rollup.Cursor{After: d.Str("after"), PassStarted: d.Time("pass_started"), Passes: d.Int("passes"),
		Active: activity.Cursor{At: d.Time("active_at"), ID: d.Str("active_id")}, ActiveConfig: d.Str("active_config"),
		ActiveShards: int(d.Int("active_shards"))}
	if err := d.Err(); err != nil {
		return rollup.Cursor{}, fmt.Errorf("firestoredb: decode the reconcile cursor: %w", err)
	}
	return c, nil
}

// SaveActiveCursor stores the scheduled runs' cursor, and the settings it
// was advanced with, leaving the full audit's alone.
func (s *Store) SaveActiveCursor(ctx context.Context, c rollup.Cursor) error {
	return s.saveCursor(ctx, map[string]*pb.Value{"active_at": fs.TimeValue(c.Active.At), "active_id": fs.StringValue(c.Active.ID),
		"active_config": fs.StringValue(c.ActiveConfig), "active_shards": fs.IntValue(int64(c.ActiveShards))})
}

// SaveFullCursor stores the full audit's cursor, leaving the scheduled
// runs' alone.
func (s *Store) SaveFullCursor(ctx context.Context, c rollup.Cursor) error {
	return s.saveCursor(ctx, map[string]*pb.Value{"after": fs.StringValue(c.After), "pass_started": fs.TimeValue(c.PassStarted),
		"passes": fs.IntValue(c.Passes)})
}

func (s *Store) saveCursor(ctx context.Context, fields map[string]*pb.Value) error {
	_, err := s.db.Commit(ctx, fs.SetFieldsWrite(s.cursorName(), fields))
	return fs.Classify(err, "save the reconcile cursor")
}

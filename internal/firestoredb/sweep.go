package firestoredb

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/activity"
)

// SweepEntry is a counter the reconcile sweep visits.
type SweepEntry struct {
	ID string
	// Deleted counters are purged, not reconciled.
	Deleted bool
}

// SweepPage lists up to limit counters after the id after, in id order,
// deleted ones included.
func (s *Rollups) SweepPage(ctx context.Context, after string, limit int) ([]SweepEntry, error) {
	docs, err := s.db.query(ctx, s.SweepQuery(after, limit))
	if err != nil {
		return nil, classify(err, "list counters")
	}
	out := make([]SweepEntry, len(docs))
	for i, d := range docs {
		_, deleted := d.GetFields()[fieldDeletedAt]
		out[i] = SweepEntry{ID: docOf(d).id, Deleted: deleted}
	}
	return out, nil
}

// SweepQuery is SweepPage's query.
func (s *Rollups) SweepQuery(after string, limit int) firestore.Query {
	q := s.db.client.Collection(CountersCollection).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q.Select(fieldDeletedAt)
}

// ReconcileCursor is where reconcile stands: the scheduled runs in the
// activity index (Active), the full audit in the counters' ids.
type ReconcileCursor struct {
	Active activity.Cursor
	// ActiveConfig is the settings that decide which markers a run reads
	// (internal/service's activityConfig) as of the last scheduled run.
	ActiveConfig string
	// ActiveShards is the most shard values markers were ever written on
	// (ACTIVITY_SHARDS at its highest): runs read all of them, so lowering
	// the setting strands no marker.
	ActiveShards int
	After        string    // full audit: last counter id checked; "" at the start of a pass
	PassStarted  time.Time // when the current pass began
	Passes       int64     // completed passes
}

func (s *Rollups) cursorName() string { return s.db.name(StateCollection + "/reconcile") }

// LoadReconcileCursor reads the sweep's cursor (zero before the first run).
func (s *Rollups) LoadReconcileCursor(ctx context.Context) (ReconcileCursor, error) {
	pd, err := s.db.get(ctx, s.cursorName())
	if err != nil {
		return ReconcileCursor{}, classify(err, "read the reconcile cursor")
	}
	if pd == nil {
		return ReconcileCursor{}, nil
	}
	d := docOf(pd)
	c := ReconcileCursor{After: d.str("after"), PassStarted: d.time("pass_started"), Passes: d.integer("passes"),
		Active: activity.Cursor{At: d.time("active_at"), ID: d.str("active_id")}, ActiveConfig: d.str("active_config"),
		ActiveShards: int(d.integer("active_shards"))}
	if err := d.done(); err != nil {
		return ReconcileCursor{}, fmt.Errorf("firestoredb: decode the reconcile cursor: %w", err)
	}
	return c, nil
}

// SaveActiveCursor stores the scheduled runs' cursor, and the settings it
// was advanced with, leaving the full audit's alone.
func (s *Rollups) SaveActiveCursor(ctx context.Context, c ReconcileCursor) error {
	return s.saveCursor(ctx, map[string]*pb.Value{"active_at": timeValue(c.Active.At), "active_id": stringValue(c.Active.ID),
		"active_config": stringValue(c.ActiveConfig), "active_shards": intValue(int64(c.ActiveShards))})
}

// SaveFullCursor stores the full audit's cursor, leaving the scheduled
// runs' alone.
func (s *Rollups) SaveFullCursor(ctx context.Context, c ReconcileCursor) error {
	return s.saveCursor(ctx, map[string]*pb.Value{"after": stringValue(c.After), "pass_started": timeValue(c.PassStarted),
		"passes": intValue(c.Passes)})
}

func (s *Rollups) saveCursor(ctx context.Context, fields map[string]*pb.Value) error {
	_, err := s.db.commit(ctx, &pb.Write{
		Operation:  &pb.Write_Update{Update: &pb.Document{Name: s.cursorName(), Fields: fields}},
		UpdateMask: &pb.DocumentMask{FieldPaths: slices.Sorted(maps.Keys(fields))},
	})
	return classify(err, "save the reconcile cursor")
}

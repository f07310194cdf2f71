package firestoredb

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
)

// SweepEntry is a counter the reconcile sweep visits.
type SweepEntry struct {
	ID string
	// Deleted counters are purged, not reconciled.
	Deleted bool
}

// SweepPage lists up to limit counters after the id after, in id order,
// deleted ones included.
func (s *Counters) SweepPage(ctx context.Context, after string, limit int) ([]SweepEntry, error) {
	docs, err := s.db.queryAll(ctx, s.SweepQuery(after, limit))
	if err != nil {
		return nil, classify(err, "list counters")
	}
	out := make([]SweepEntry, len(docs))
	for i, d := range docs {
		_, deleted := d.Data()[fieldDeletedAt]
		out[i] = SweepEntry{ID: d.Ref.ID, Deleted: deleted}
	}
	return out, nil
}

// SweepQuery is SweepPage's query.
func (s *Counters) SweepQuery(after string, limit int) firestore.Query {
	q := s.db.client.Collection(CountersCollection).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q.Select(fieldDeletedAt)
}

// ReconcileCursor is where the resumable reconcile sweep stands.
type ReconcileCursor struct {
	After       string    `firestore:"after"`        // last counter id checked; "" at the start of a pass
	PassStarted time.Time `firestore:"pass_started"` // when the current pass began
	Passes      int64     `firestore:"passes"`       // completed passes
}

func (s *Counters) cursorRef() *firestore.DocumentRef {
	return s.db.client.Collection(StateCollection).Doc("reconcile")
}

// LoadReconcileCursor reads the sweep's cursor (zero before the first run).
func (s *Counters) LoadReconcileCursor(ctx context.Context) (ReconcileCursor, error) {
	snap, err := s.db.get(ctx, s.cursorRef())
	if code(err) == codes.NotFound {
		return ReconcileCursor{}, nil
	}
	if err != nil {
		return ReconcileCursor{}, classify(err, "read the reconcile cursor")
	}
	var c ReconcileCursor
	if err := snap.DataTo(&c); err != nil {
		return ReconcileCursor{}, fmt.Errorf("firestoredb: decode the reconcile cursor: %w", err)
	}
	return c, nil
}

// SaveReconcileCursor stores the sweep's cursor.
func (s *Counters) SaveReconcileCursor(ctx context.Context, c ReconcileCursor) error {
	_, err := s.db.commit(ctx, &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{
		Name: s.cursorRef().Path,
		Fields: map[string]*pb.Value{
			"after": stringValue(c.After), "pass_started": timeValue(c.PassStarted), "passes": intValue(c.Passes),
		},
	}}})
	return classify(err, "save the reconcile cursor")
}

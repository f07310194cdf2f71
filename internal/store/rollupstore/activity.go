package rollupstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/activity"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/retry"
	"github.com/shardcount/shardcount/internal/shardedts"
)

// The activity index (internal/activity): counter_activity/{counterId},
// shard and timestamp, written by the commits that write the counter's
// shards (at most once per ACTIVITY_EVERY per instance), by a deletion (at
// purge_after) and a shrink (at merge_until), and by Mark; read by the
// scheduled reconcile, oldest first, one query per chunk of shard values.

// Mark marks counter id at at, unless its marker is later: the scheduled
// reconcile visits it then. A marker is never moved back: writes since the
// later one, by an instance that does not mark each, are due a visit
// after it (reconcile's own marks, at its clock's now, are applied as late
// as their deadline, after an increment may have marked the counter
// later).
func (s *Store) Mark(ctx context.Context, id string, at time.Time) error {
	name := s.db.Name(dm.Marker(id))
	return retry.Raced(fmt.Sprintf("the marker of %q", id), func(int) (bool, error) {
		docs, _, err := s.db.GetAll(ctx, []string{name}, time.Time{})
		if err != nil {
			return false, fs.Classify(err, "read the marker of "+id)
		}
		w := s.base.ActivityWrite(id, at)
		if d := docs[0]; d != nil {
			if !fs.DocOf(d).Time(dm.FieldActivityAt).Before(at) {
				return false, nil // marked as late already
			}
			w.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: d.GetUpdateTime()}}
		} else {
			w.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}}
		}
		_, err = s.db.Commit(ctx, w)
		switch fs.Code(err) {
		case codes.OK:
			return false, nil
		case codes.FailedPrecondition, codes.AlreadyExists, codes.NotFound:
			return true, nil // marked meanwhile: read it again
		}
		return false, fs.Classify(err, "mark "+id+" active")
	})
}

// MarkersQueries are Markers' queries: one per chunk of shard values, of
// the first shards (at least ACTIVITY_SHARDS).
func (s *Store) MarkersQueries(shards int, after activity.Cursor, until time.Time, limit int) []firestore.Query {
	var out []firestore.Query
	for chunk := range slices.Chunk(shardedts.Values(max(shards, s.base.ActivityShards())), shardedts.MaxIn) {
		q := s.db.Collection(dm.Activity).Where(dm.FieldActivityShard, "in", chunk).
			Where(dm.FieldActivityAt, "<=", until).
			OrderBy(dm.FieldActivityAt, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit + 1)
		if after.ID != "" {
			q = q.StartAfter(after.At, after.ID)
		} else {
			q = q.Where(dm.FieldActivityAt, ">=", after.At)
		}
		out = append(out, q)
	}
	return out
}

// Markers returns up to limit markers after the cursor, at or before
// until, oldest first, and whether there are more (activity.Source).
func (s *Store) Markers(ctx context.Context, after activity.Cursor, until time.Time, limit int) ([]activity.Marker, bool, error) {
	return s.MarkersOn(ctx, 0, after, until, limit)
}

// MarkersOn is Markers on the first shards values (at least
// ACTIVITY_SHARDS): those a higher setting once wrote on too.
func (s *Store) MarkersOn(ctx context.Context, shards int, after activity.Cursor, until time.Time, limit int) ([]activity.Marker, bool, error) {
	var all []activity.Marker
	for _, q := range s.MarkersQueries(shards, after, until, limit) {
		docs, err := s.db.Query(ctx, q)
		if err != nil {
			return nil, false, fs.Classify(err, "read the activity index")
		}
		for _, pd := range docs {
			d := fs.DocOf(pd)
			all = append(all, activity.Marker{ID: d.ID, At: d.Time(dm.FieldActivityAt)})
		}
	}
	slices.SortFunc(all, func(a, b activity.Marker) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(all) > limit {
		return all[:limit], true, nil
	}
	return all, false, nil
}

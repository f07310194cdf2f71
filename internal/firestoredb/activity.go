package firestoredb

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/activity"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/shardedts"
)

// The activity index (internal/activity): counter_activity/{counterId},
// shard and timestamp, written by the commits that write the counter's
// shards (at most once per Options.ActivityEvery per instance), by a
// deletion (at purge_after) and a shrink (at merge_until); read by the
// scheduled reconcile, oldest first, one query per chunk of shard values.
const (
	ActivityCollection = "counter_activity"
	fieldActivityShard = shardedts.ShardField
	fieldActivityAt    = shardedts.TimeField
)

func (b *base) activityName(id string) string { return b.db.name(ActivityCollection + "/" + id) }

// activityWrite marks counter id at at, or at its commit's time when at is
// zero, on a random shard value.
func (b *base) activityWrite(id string, at time.Time) *pb.Write {
	fields := map[string]*pb.Value{fieldActivityShard: stringValue(strconv.Itoa(b.intn(id, b.activityShards())))}
	mask := []string{fieldActivityShard}
	var transforms []*pb.DocumentTransform_FieldTransform
	if at.IsZero() {
		transforms = append(transforms, serverTime(fieldActivityAt))
	} else {
		fields[fieldActivityAt] = timeValue(at)
		mask = append(mask, fieldActivityAt)
	}
	return &pb.Write{
		Operation:        &pb.Write_Update{Update: &pb.Document{Name: b.activityName(id), Fields: fields}},
		UpdateMask:       &pb.DocumentMask{FieldPaths: mask},
		UpdateTransforms: transforms,
	}
}

func (b *base) activityShards() int { return max(1, b.opts.ActivityShards) }

// markDue reports whether this instance's next commit to counter c marks
// it: not for ActivityEvery since it last did. A counter is known by its
// id and creation, so one created again over a purged tombstone (whose
// marker went with it) is marked at once.
func (b *base) markDue(c counter.Counter) bool {
	last, ok := b.marked.Get(markKey(c))
	return !ok || !b.now().Before(last.Add(b.opts.ActivityEvery))
}

// noteMarked remembers that a commit marked counter c, from start (when
// the commit began: the marker's time is no earlier).
func (b *base) noteMarked(c counter.Counter, start time.Time) { b.marked.Add(markKey(c), start) }

func markKey(c counter.Counter) string {
	return c.ID + "@" + strconv.FormatInt(c.CreatedAt.UnixNano(), 10)
}

// Mark marks counter id at at, unless its marker is later: the scheduled
// reconcile visits it then. A marker is never moved back: writes since the
// later one, by an instance that does not mark each, are due a visit
// after it (reconcile's own marks, at its clock's now, are applied as late
// as their deadline, after an increment may have marked the counter
// later).
func (s *Rollups) Mark(ctx context.Context, id string, at time.Time) error {
	name := s.activityName(id)
	for range maxVersionAttempts {
		docs, _, err := s.db.getAt(ctx, []string{name}, time.Time{})
		if err != nil {
			return classify(err, "read the marker of "+id)
		}
		w := s.activityWrite(id, at)
		if d := docs[0]; d != nil {
			if !docOf(d).time(fieldActivityAt).Before(at) {
				return nil // marked as late already
			}
			w.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: d.GetUpdateTime()}}
		} else {
			w.CurrentDocument = &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}}
		}
		_, err = s.db.commit(ctx, w)
		switch code(err) {
		case codes.OK:
			return nil
		case codes.FailedPrecondition, codes.AlreadyExists, codes.NotFound:
			continue // marked meanwhile: read it again
		}
		return classify(err, "mark "+id+" active")
	}
	return errs.Retryable(nil, retryAfter, "the marker of %q keeps changing; retry", id)
}

// MarkersQueries are Markers' queries: one per chunk of shard values, of
// the first shards (at least ACTIVITY_SHARDS).
func (s *Rollups) MarkersQueries(shards int, after activity.Cursor, until time.Time, limit int) []firestore.Query {
	var out []firestore.Query
	for chunk := range slices.Chunk(shardedts.Values(max(shards, s.activityShards())), shardedts.MaxIn) {
		q := s.db.client.Collection(ActivityCollection).Where(fieldActivityShard, "in", chunk).
			Where(fieldActivityAt, "<=", until).
			OrderBy(fieldActivityAt, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit + 1)
		if after.ID != "" {
			q = q.StartAfter(after.At, after.ID)
		} else {
			q = q.Where(fieldActivityAt, ">=", after.At)
		}
		out = append(out, q)
	}
	return out
}

// Markers returns up to limit markers after the cursor, at or before
// until, oldest first, and whether there are more (activity.Source).
func (s *Rollups) Markers(ctx context.Context, after activity.Cursor, until time.Time, limit int) ([]activity.Marker, bool, error) {
	return s.MarkersOn(ctx, 0, after, until, limit)
}

// MarkersOn is Markers on the first shards values (at least
// ACTIVITY_SHARDS): those a higher setting once wrote on too.
func (s *Rollups) MarkersOn(ctx context.Context, shards int, after activity.Cursor, until time.Time, limit int) ([]activity.Marker, bool, error) {
	var all []activity.Marker
	for _, q := range s.MarkersQueries(shards, after, until, limit) {
		docs, err := s.db.query(ctx, q)
		if err != nil {
			return nil, false, classify(err, "read the activity index")
		}
		for _, pd := range docs {
			d := docOf(pd)
			all = append(all, activity.Marker{ID: d.id, At: d.time(fieldActivityAt)})
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

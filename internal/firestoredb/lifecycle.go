package firestoredb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// A counter's life after its creation: deletion (a tombstone, then a
// purge of everything under it) and reset.
//
// Deleting cannot stop at once the instances that cached the counter
// (SHARD_COUNT_CACHE): until then they may still write shards, idempotency
// records or members under it. So Delete leaves a tombstone on the
// counter document with purge_after, the time after which no such write
// can land; reads and increments see the counter as gone from then on.
// Purge deletes everything under the counter in batches, and after
// purge_after also the tombstone; until that is done, the id cannot be
// created again (FAILED_PRECONDITION with Retry-After), so a new counter of
// the same id never counts a late write of the old one.

// purgeOrder is the order Purge empties subcollections in: windows first,
// so rankings forget the counter at once. Collections not listed (added
// later) follow.
var purgeOrder = []string{WindowsCollection, MembersCollection, ShardsCollection, KeysCollection, SlotsCollection}

// deleteChunk is the most documents deleted in one commit: Firestore takes
// 500 writes, and each commit also counts them on the tombstone.
const deleteChunk = 499

// Delete marks counter id deleted, with purge_after = lateWrites (how
// long other instances may still write under it) after its commit lands
// at the latest (ctx's deadline), then purges what it can while ctx lasts. It returns the tombstone; deleting a deleted counter
// again only purges more.
func (s *Counters) Delete(ctx context.Context, id string, lateWrites time.Duration) (counter.Counter, error) {
	var tomb counter.Deletion
	sent := s.now() // no later than the commit: when what it wrote is known from
	c, resp, err := s.update(ctx, id, true, "delete counter", func(c counter.Counter, _ time.Time) ([]*pb.Write, error) {
		if c.IsDeleted() {
			return nil, nil
		}
		now := s.now().Truncate(time.Microsecond) // as Firestore keeps it
		// Until the tombstone lands (as late as the call's deadline) other
		// instances may read the counter live and cache it: late writes
		// may come for lateWrites after that.
		tomb = counter.Deletion{At: now, PurgeAfter: landsBy(ctx, now).Add(lateWrites).Truncate(time.Microsecond)}
		// count 0: rankings by total (count > 0) forget it at once;
		// deleted: true, what a client's listener renders as gone.
		fields := map[string]*pb.Value{fieldDeletedAt: timeValue(tomb.At), fieldPurgeAfter: timeValue(tomb.PurgeAfter), fieldCount: intValue(0),
			fieldDeleted: boolValue(true)}
		// Marked at purge_after: reconcile finishes the purge then.
		return []*pb.Write{updateWrite(s.counterName(id), fields, []string{fieldCount, fieldDeleted, fieldDeletedAt, fieldPurgeAfter}, c.Version),
			s.activityWrite(id, tomb.PurgeAfter)}, nil
	})
	if err != nil {
		return counter.Counter{}, err
	}
	if resp != nil {
		c.Deleted, c.Version = tomb, versionOf(resp, 0)
	}
	s.forget(id)
	s.remember(c, sent)
	// Half of what is left of the request's time; the rest is purged
	// later, by reconcile or by a create of the same id.
	pctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		defer cancel()
	}
	if _, _, err := s.purge(pctx, c, false); err != nil && pctx.Err() == nil && !errs.Is(err, errs.Unavailable) && !errors.Is(err, errReplaced) {
		return counter.Counter{}, err
	}
	return c, nil
}

// Purge continues the purge of deleted counter id: it deletes what is
// under it while ctx lasts and, once purge_after has passed and nothing is
// left, the tombstone itself. It reports whether the counter is gone for
// good; a counter that is not deleted (or created again meanwhile) is left
// alone (false), and one with no document at all is NOT_FOUND.
func (s *Counters) Purge(ctx context.Context, id string) (bool, error) {
	c, err := s.stored(ctx, id)
	if err != nil || !c.IsDeleted() {
		return false, err
	}
	_, done, err := s.purge(ctx, c, true)
	if errors.Is(err, errReplaced) {
		return false, nil
	}
	return done, err
}

// freeTombstone makes the id of deleted counter tomb usable again for
// Create: once purge_after has passed, it purges what is left and returns
// the tombstone's version for Create to replace. Before, it is
// FAILED_PRECONDITION with Retry-After; errReplaced when the tombstone
// changed meanwhile.
func (s *Counters) freeTombstone(ctx context.Context, tomb counter.Counter) (time.Time, error) {
	if wait := tomb.Deleted.PurgeAfter.Sub(s.now()); wait > 0 {
		return time.Time{}, &errs.Error{Code: errs.FailedPrecondition, Field: "counter_id", RetryAfter: wait + time.Second,
			Message: fmt.Sprintf("counter_id %q belonged to a counter deleted at %s; it can be used again after %s, when no late write of the old counter can land",
				tomb.ID, tomb.Deleted.At.UTC().Format(time.RFC3339), tomb.Deleted.PurgeAfter.UTC().Format(time.RFC3339))}
	}
	version, done, err := s.purge(ctx, tomb, false)
	switch {
	case errors.Is(err, errReplaced):
		return time.Time{}, err // created, or dropped, meanwhile: Create reads it again
	case err != nil || !done:
		return time.Time{}, errs.Retryable(err, retryAfter, "counter_id %q: the documents of its deleted counter are still being removed; retry", tomb.ID)
	}
	return version, nil
}

// adoptOrphans looks for documents under an id with no counter document
// (deleted by hand, or left by a purge's last roll-up): if there are any,
// it makes the id a tombstone, free at once, which Create purges like any
// other. A creation of the id meanwhile is errReplaced: the orphans may be
// the new counter's documents. Nothing under the id: a zero Counter.
func (s *Counters) adoptOrphans(ctx context.Context, id string) (counter.Counter, error) {
	colls, err := s.subcollections(ctx, id)
	if err != nil || len(colls) == 0 {
		return counter.Counter{}, err
	}
	now := s.now().Truncate(time.Microsecond) // as Firestore keeps it
	tomb := counter.Counter{ID: id, NumShards: counter.MinShards, Deleted: counter.Deletion{At: now, PurgeAfter: now}}
	resp, err := s.db.commit(ctx, createWrite(s.counterName(id), map[string]*pb.Value{
		fieldNumShards: intValue(int64(tomb.NumShards)), fieldCount: intValue(0),
		fieldDeleted: boolValue(true), fieldDeletedAt: timeValue(now), fieldPurgeAfter: timeValue(now),
	}))
	switch code(err) {
	case codes.OK:
		tomb.Version = versionOf(resp, 0)
		return tomb, nil
	case codes.AlreadyExists:
		return counter.Counter{}, errReplaced // created meanwhile: Create reads it again
	}
	return counter.Counter{}, classify(err, "adopt the documents under "+id)
}

// errReplaced: the tombstone a purge works on was replaced (its id created
// again) or dropped by another purge; what is under the id is not its own.
var errReplaced = errors.New("firestoredb: the tombstone was replaced")

// purge deletes the documents under tombstone c in chunks while ctx lasts,
// and with dropTombstone, once purge_after has passed and nothing is left,
// the tombstone too. It returns the tombstone's version, and whether
// nothing is left under it (after purge_after: nothing can come back).
//
// Each chunk's commit counts its deletions on the tombstone (purged), on
// the condition that the tombstone is still the version this purge knows:
// a purge that began on a tombstone stops (errReplaced) once the id is
// created again, and never deletes the new counter's documents; two
// purges of one tombstone take turns.
func (s *Counters) purge(ctx context.Context, c counter.Counter, dropTombstone bool) (time.Time, bool, error) {
	version := c.Version
	// Whether late writes were over before the listing: one that lands
	// after it, in a collection already emptied or not listed, must keep
	// the tombstone for the next purge to find.
	settled := !s.now().Before(c.Deleted.PurgeAfter)
	colls, err := s.subcollections(ctx, c.ID)
	if err != nil {
		return version, false, err
	}
	for _, coll := range colls {
		for {
			docs, err := s.db.query(ctx, s.db.client.Collection(coll).Select().Limit(deleteChunk))
			if err != nil {
				return version, false, classify(err, "list "+coll)
			}
			if len(docs) == 0 {
				break
			}
			count := updateWrite(s.counterName(c.ID), nil, []string{}, version)
			count.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{increment(fieldPurged, int64(len(docs)))}
			writes := []*pb.Write{count}
			for _, d := range docs {
				writes = append(writes, &pb.Write{Operation: &pb.Write_Delete{Delete: d.GetName()}})
			}
			resp, err := s.db.commit(ctx, writes...)
			switch code(err) {
			case codes.OK:
				version = versionOf(resp, 0)
				continue
			case codes.FailedPrecondition, codes.NotFound:
				if version, err = s.sameTombstone(ctx, c); err != nil {
					return version, false, err
				}
				continue
			}
			return version, false, classify(err, "purge "+coll)
		}
	}
	if !settled {
		return version, false, nil // late writes may still land
	}
	if dropTombstone {
		// The counter's activity marker goes with it: nothing is left to
		// visit, and 10⁸ deleted counters leave no markers behind.
		_, err := s.db.commit(ctx, deleteWrite(s.counterName(c.ID), version),
			&pb.Write{Operation: &pb.Write_Delete{Delete: s.activityName(c.ID)}})
		switch code(err) {
		case codes.OK, codes.NotFound:
			s.forget(c.ID)
		case codes.FailedPrecondition:
			return version, false, nil // another purge counted meanwhile: the next run drops it
		default:
			return version, false, classify(err, "drop the tombstone of "+c.ID)
		}
	}
	return version, true, nil
}

// sameTombstone returns the version of tombstone c now, after a purge's
// commit found it changed: errReplaced if it is no longer c's.
func (s *Counters) sameTombstone(ctx context.Context, c counter.Counter) (time.Time, error) {
	now, err := s.stored(ctx, c.ID)
	switch {
	case errs.Is(err, errs.NotFound):
		return time.Time{}, errReplaced
	case err != nil:
		return time.Time{}, err
	case !now.IsDeleted() || !now.Deleted.At.Equal(c.Deleted.At.Truncate(time.Microsecond)):
		return time.Time{}, errReplaced
	}
	return now.Version, nil
}

// subcollections lists the paths of the collections under counter id,
// those of purgeOrder first.
func (s *Counters) subcollections(ctx context.Context, id string) ([]string, error) {
	ids, err := s.db.collections(ctx, s.counterName(id))
	if err != nil {
		return nil, classify(err, "list the collections of counter "+id)
	}
	slices.SortStableFunc(ids, func(a, b string) int {
		rank := func(c string) int {
			if i := slices.Index(purgeOrder, c); i >= 0 {
				return i
			}
			return len(purgeOrder)
		}
		return rank(a) - rank(b)
	})
	out := make([]string, len(ids))
	for i, c := range ids {
		out[i] = underCounter(id, c)
	}
	return out, nil
}

// ResetReads bounds what one Reset reads: the document and a SUM per
// attempt.
const ResetReads = 2 * maxVersionAttempts

// Reset sets counter id's value to v as of a read time R: it reads the
// counter's document and sums its shards at R, then adds v − sum to one
// shard in one commit with a change of the document (reset_at), on the
// condition that the document is still the version read at R. So
// increments committed after R count on top and none is lost or counted
// twice, and of resets read at the same version one commits and the
// others read again: ten resets at once land once each, in turn. It
// returns R. The roll-up follows, like after any increment.
func (s *Counters) Reset(ctx context.Context, id string, v int64) (time.Time, error) {
	if err := counter.ValidateResetValue(v); err != nil {
		return time.Time{}, err
	}
	var asOf time.Time
	_, resp, err := s.update(ctx, id, false, "reset counter", func(c counter.Counter, at time.Time) ([]*pb.Write, error) {
		if c.Unique {
			return nil, errs.Invalid("counter_id", "%q is a unique counter: its value is its number of members, which a reset cannot change", id)
		}
		sum, at, err := s.sum(ctx, id, at)
		if err != nil {
			return nil, err
		}
		asOf = at
		delta, ok := counter.Add(v, -sum)
		if !ok {
			return nil, errs.New(errs.DataLoss, "counter %q holds %d: the shards were written outside the functions", id, sum)
		}
		if delta == 0 {
			return nil, nil
		}
		stamp := updateWrite(s.counterName(id), nil, []string{}, c.Version)
		stamp.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldResetAt)}
		return []*pb.Write{stamp, s.shardWrite(id, s.intn(id, c.NumShards), shardChange{Count: delta, Commits: 1}), s.activityWrite(id, time.Time{})}, nil
	})
	if err != nil {
		return time.Time{}, err
	}
	if resp != nil {
		// What this instance knew of the value is off by the reset.
		s.known.Remove(id)
		if v, ok := transformResult(resp.GetWriteResults()[1], fieldCount, []string{fieldCommits, fieldCount, fieldSlow}); ok && counter.Saturated(v) {
			return time.Time{}, errs.New(errs.DataLoss, "a shard of counter %q reached int64's limit, so part of the reset may be lost: reset it again", id)
		}
	}
	return asOf, nil
}

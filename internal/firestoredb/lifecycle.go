package firestoredb

import (
	"context"
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

// deleteChunk is the most documents deleted in one commit (Firestore takes
// 500 writes).
const deleteChunk = 500

// Delete marks counter id deleted, with purge_after = now + lateWrites
// (how long other instances may still write under it), then purges what it
// can while ctx lasts. It returns the tombstone; deleting a deleted counter
// again only purges more.
func (s *Counters) Delete(ctx context.Context, id string, lateWrites time.Duration) (counter.Counter, error) {
	var tomb counter.Deletion
	c, resp, err := s.update(ctx, id, true, "delete counter", func(c counter.Counter) ([]*pb.Write, error) {
		if c.IsDeleted() {
			return nil, nil
		}
		now := s.now()
		tomb = counter.Deletion{At: now, PurgeAfter: now.Add(lateWrites)}
		// count 0: rankings by total (count > 0) forget it at once.
		fields := map[string]*pb.Value{fieldDeletedAt: timeValue(tomb.At), fieldPurgeAfter: timeValue(tomb.PurgeAfter), fieldCount: intValue(0)}
		return []*pb.Write{updateWrite(s.counterName(id), fields, []string{fieldCount, fieldDeletedAt, fieldPurgeAfter}, c.Version)}, nil
	})
	if err != nil {
		return counter.Counter{}, err
	}
	if resp != nil {
		c.Deleted, c.Version = tomb, versionOf(resp, 0)
	}
	s.forget(id)
	s.remember(c, s.now())
	// Half of what is left of the request's time; the rest is purged
	// later, by reconcile or by a create of the same id.
	pctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		defer cancel()
	}
	if _, err := s.purge(pctx, c, false); err != nil && pctx.Err() == nil && !errs.Is(err, errs.Unavailable) {
		return counter.Counter{}, err
	}
	return c, nil
}

// Purge continues the purge of deleted counter id: it deletes what is
// under it while ctx lasts and, once purge_after has passed and nothing is
// left, the tombstone itself. It reports whether the counter is gone for
// good; a counter that is not deleted is left alone (false), and one with
// no document at all is NOT_FOUND.
func (s *Counters) Purge(ctx context.Context, id string) (bool, error) {
	c, err := s.stored(ctx, id)
	if err != nil || !c.IsDeleted() {
		return false, err
	}
	return s.purge(ctx, c, true)
}

// freeTombstone makes the id of deleted counter tomb usable again for
// Create: once purge_after has passed, it purges what is left, and Create
// replaces the tombstone. Before, it is FAILED_PRECONDITION with
// Retry-After.
func (s *Counters) freeTombstone(ctx context.Context, tomb counter.Counter) error {
	if wait := tomb.Deleted.PurgeAfter.Sub(s.now()); wait > 0 {
		return &errs.Error{Code: errs.FailedPrecondition, Field: "counter_id", RetryAfter: wait + time.Second,
			Message: fmt.Sprintf("counter_id %q belonged to a counter deleted at %s; it can be used again after %s, when no late write of the old counter can land",
				tomb.ID, tomb.Deleted.At.UTC().Format(time.RFC3339), tomb.Deleted.PurgeAfter.UTC().Format(time.RFC3339))}
	}
	done, err := s.purge(ctx, tomb, false)
	if err != nil || !done {
		return errs.Retryable(err, retryAfter, "counter_id %q: the documents of its deleted counter are still being removed; retry", tomb.ID)
	}
	return nil
}

// purge deletes the documents under tombstone c in batches while ctx lasts,
// and with dropTombstone, once purge_after has passed and nothing is left,
// the tombstone too. It reports whether nothing is left under it (after
// purge_after: nothing can come back).
func (s *Counters) purge(ctx context.Context, c counter.Counter, dropTombstone bool) (bool, error) {
	colls, err := s.subcollections(ctx, c.ID)
	if err != nil {
		return false, err
	}
	for _, coll := range colls {
		for {
			docs, err := s.db.query(ctx, s.db.client.Collection(coll).Select().Limit(deleteChunk))
			if err != nil {
				return false, classify(err, "list "+coll)
			}
			if len(docs) == 0 {
				break
			}
			writes := make([]*pb.Write, len(docs))
			for i, d := range docs {
				writes[i] = &pb.Write{Operation: &pb.Write_Delete{Delete: d.GetName()}}
			}
			if _, err := s.db.commit(ctx, writes...); err != nil {
				return false, classify(err, "purge "+coll)
			}
		}
	}
	if s.now().Before(c.Deleted.PurgeAfter) {
		return false, nil // late writes may still land
	}
	if dropTombstone {
		_, err := s.db.commit(ctx, deleteWrite(s.counterName(c.ID), c.Version))
		switch code(err) {
		case codes.OK, codes.NotFound:
			s.forget(c.ID)
		case codes.FailedPrecondition:
			return false, nil // changed meanwhile (re-created): not ours any more
		default:
			return false, classify(err, "drop the tombstone of "+c.ID)
		}
	}
	return true, nil
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

// Reset sets counter id's value to v as of a read time R: it sums the
// shards at R and adds v − sum to one shard in one commit, so increments
// committed after R count on top and none is lost or counted twice. It
// returns R. The roll-up follows, like after any increment.
func (s *Counters) Reset(ctx context.Context, id string, v int64) (time.Time, error) {
	c, err := s.liveCached(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	if c.Unique {
		return time.Time{}, errs.Invalid("counter_id", "%q is a unique counter: its value is its number of members, which a reset cannot change", id)
	}
	sum, at, err := s.sum(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	delta, ok := counter.Add(v, -sum)
	if !ok {
		return time.Time{}, errs.New(errs.DataLoss, "counter %q holds %d: the shards were written outside the functions", id, sum)
	}
	s.known.Remove(id)
	if delta == 0 {
		return at, nil
	}
	if _, err := s.db.commit(ctx, s.shardWrite(id, s.intn(c.NumShards), shardChange{Count: delta, Commits: 1})); err != nil {
		return time.Time{}, classify(err, "reset counter "+id)
	}
	return at, nil
}

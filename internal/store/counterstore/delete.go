package counterstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// A counter's end: deletion (a tombstone, then a purge of everything
// under it).
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
var purgeOrder = []string{dm.Windows, dm.Members, dm.Shards, dm.Keys, dm.Slots}

// deleteChunk is the most documents one commit of a purge deletes (and
// counts on the tombstone): what one listing reads, and a commit far below
// the largest request Firestore takes (10 MiB; the emulator's, 4 MiB): a
// deletion names its document, at most about 1.6 KB.
const deleteChunk = 499

// Delete marks counter id deleted, with purge_after = lateWrites (how
// long other instances may still write under it) after its commit lands
// at the latest (ctx's deadline), then purges what it can while ctx lasts. It returns the tombstone; deleting a deleted counter
// again only purges more.
func (s *Store) Delete(ctx context.Context, id string, lateWrites time.Duration) (counter.Counter, error) {
	var tomb counter.Deletion
	sent := s.base.Now() // no later than the commit: when what it wrote is known from
	c, resp, err := s.Update(ctx, id, true, "delete counter", func(c counter.Counter, _ time.Time) ([]*pb.Write, error) {
		if c.IsDeleted() {
			return nil, nil
		}
		now := s.base.Now().Truncate(time.Microsecond) // as Firestore keeps it
		// Until the tombstone lands (as late as the call's deadline) other
		// instances may read the counter live and cache it: late writes
		// may come for lateWrites after that.
		tomb = counter.Deletion{At: now, PurgeAfter: fs.LandsBy(ctx, now).Add(lateWrites).Truncate(time.Microsecond)}
		// count 0: rankings by total (count > 0) forget it at once;
		// deleted: true, what a client's listener renders as gone.
		tombstone := map[string]*pb.Value{dm.FieldDeletedAt: fs.TimeValue(tomb.At), dm.FieldPurgeAfter: fs.TimeValue(tomb.PurgeAfter), dm.FieldCount: fs.IntValue(0),
			dm.FieldDeleted: fs.BoolValue(true)}
		// Marked at purge_after: reconcile finishes the purge then.
		return []*pb.Write{fs.UpdateWrite(s.name(dm.Counter(id)), tombstone, []string{dm.FieldCount, dm.FieldDeleted, dm.FieldDeletedAt, dm.FieldPurgeAfter}, c.Version),
			s.base.ActivityWrite(id, tomb.PurgeAfter)}, nil
	})
	if err != nil {
		return counter.Counter{}, err
	}
	if resp != nil {
		c.Deleted, c.Version = tomb, fs.VersionOf(resp, 0)
	}
	s.cached.Remove(id)
	s.Remember(c, sent)
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
func (s *Store) Purge(ctx context.Context, id string) (bool, error) {
	c, err := s.Stored(ctx, id)
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
func (s *Store) freeTombstone(ctx context.Context, tomb counter.Counter) (time.Time, error) {
	if wait := tomb.Deleted.PurgeAfter.Sub(s.base.Now()); wait > 0 {
		return time.Time{}, &errs.Error{Code: errs.FailedPrecondition, Field: "counter_id", RetryAfter: wait + time.Second,
			Message: fmt.Sprintf("counter_id %q belonged to a counter deleted at %s; it can be used again after %s, when no late write of the old counter can land",
				tomb.ID, tomb.Deleted.At.UTC().Format(time.RFC3339), tomb.Deleted.PurgeAfter.UTC().Format(time.RFC3339))}
	}
	version, done, err := s.purge(ctx, tomb, false)
	switch {
	case errors.Is(err, errReplaced):
		return time.Time{}, err // created, or dropped, meanwhile: Create reads it again
	case err != nil || !done:
		return time.Time{}, errs.Retryable(err, fs.RetryAfter, "counter_id %q: the documents of its deleted counter are still being removed; retry", tomb.ID)
	}
	return version, nil
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
func (s *Store) purge(ctx context.Context, c counter.Counter, dropTombstone bool) (time.Time, bool, error) {
	version := c.Version
	// Whether late writes were over before the listing: one that lands
	// after it, in a collection already emptied or not listed, must keep
	// the tombstone for the next purge to find.
	settled := !s.base.Now().Before(c.Deleted.PurgeAfter)
	colls, err := s.subcollections(ctx, c.ID)
	if err != nil {
		return version, false, err
	}
	for _, coll := range colls {
		for {
			docs, err := s.db.Query(ctx, s.db.Collection(coll).Select().Limit(deleteChunk))
			if err != nil {
				return version, false, fs.Classify(err, "list "+coll)
			}
			if len(docs) == 0 {
				break
			}
			count := fs.UpdateWrite(s.name(dm.Counter(c.ID)), nil, []string{}, version)
			count.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.Increment(dm.FieldPurged, int64(len(docs)))}
			writes := []*pb.Write{count}
			for _, d := range docs {
				writes = append(writes, fs.RemoveWrite(d.GetName()))
			}
			resp, err := s.db.Commit(ctx, writes...)
			switch fs.Code(err) {
			case codes.OK:
				version = fs.VersionOf(resp, 0)
				continue
			case codes.FailedPrecondition, codes.NotFound:
				if version, err = s.sameTombstone(ctx, c); err != nil {
					return version, false, err
				}
				continue
			}
			return version, false, fs.Classify(err, "purge "+coll)
		}
	}
	if !settled {
		return version, false, nil // late writes may still land
	}
	if dropTombstone {
		// The counter's activity marker goes with it: nothing is left to
		// visit, and 10⁸ deleted counters leave no markers behind.
		_, err := s.db.Commit(ctx, fs.DeleteWrite(s.name(dm.Counter(c.ID)), version),
			fs.RemoveWrite(s.name(dm.Marker(c.ID))))
		switch fs.Code(err) {
		case codes.OK, codes.NotFound:
			s.cached.Remove(c.ID)
		case codes.FailedPrecondition:
			return version, false, nil // another purge counted meanwhile: the next run drops it
		default:
			return version, false, fs.Classify(err, "drop the tombstone of "+c.ID)
		}
	}
	return version, true, nil
}

// sameTombstone returns the version of tombstone c now, after a purge's
// commit found it changed: errReplaced if it is no longer c's.
func (s *Store) sameTombstone(ctx context.Context, c counter.Counter) (time.Time, error) {
	now, err := s.Stored(ctx, c.ID)
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
func (s *Store) subcollections(ctx context.Context, id string) ([]string, error) {
	ids, err := s.db.CollectionIDs(ctx, s.name(dm.Counter(id)))
	if err != nil {
		return nil, fs.Classify(err, "list the collections of counter "+id)
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
		out[i] = dm.UnderCounter(id, c)
	}
	return out, nil
}

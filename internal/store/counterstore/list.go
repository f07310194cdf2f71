package counterstore

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// List returns up to limit live counters after the id after, in id order:
// those of owner, or every counter when all is set. The last id read is
// the next page's after ("" when there is no next page): tombstones are
// skipped, so a page may hold fewer than limit.
func (s *Store) List(ctx context.Context, owner string, all bool, after string, limit int) ([]counter.Counter, string, error) {
	docs, err := s.db.Query(ctx, s.ListQuery(owner, all, after, limit))
	if err != nil {
		return nil, "", fs.Classify(err, "list counters")
	}
	var out []counter.Counter
	for _, d := range docs {
		c, err := s.decode(d)
		if err != nil || c.IsDeleted() {
			continue // a corrupt document is DATA_LOSS for its own requests
		}
		out = append(out, c)
	}
	next := ""
	if len(docs) == limit {
		next = fs.DocOf(docs[len(docs)-1]).ID
	}
	return out, next, nil
}

// ListQuery is List's query, for the index check.
func (s *Store) ListQuery(owner string, all bool, after string, limit int) firestore.Query {
	q := s.db.Collection(dm.Counters).Query
	if !all {
		q = q.Where(dm.FieldOwner, "==", owner)
	}
	q = q.OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q
}

// SetRanked says whether rankings show counter id, at once: on its
// document, and on its buckets of the windows rankings look at now (the
// current and the previous ones, and of a choice counter each choice's
// too, with its all-time total); later buckets take it from the roll-up.
func (s *Store) SetRanked(ctx context.Context, id string, ranked bool) error {
	now := s.base.Now()
	flag := map[string]*pb.Value{dm.FieldRanked: fs.BoolValue(ranked)}
	c, resp, err := s.Update(ctx, id, false, "rank counter", func(c counter.Counter, _ time.Time) ([]*pb.Write, error) {
		buckets, _, err := s.db.GetAll(ctx, s.rankedBuckets(c, now), time.Time{})
		if err != nil {
			return nil, fs.Classify(err, "read the buckets of "+id)
		}
		writes := []*pb.Write{fs.UpdateWrite(s.name(dm.Counter(id)), flag, []string{dm.FieldRanked}, c.Version)}
		for _, b := range buckets {
			if b != nil {
				writes = append(writes, fs.UpdateWrite(b.GetName(), flag, []string{dm.FieldRanked}, b.GetUpdateTime().AsTime()))
			}
		}
		return writes, nil
	})
	if err != nil {
		return err
	}
	c.Ranked, c.Version = ranked, fs.VersionOf(resp, 0)
	s.Remember(c, now)
	return nil
}

// rankedBuckets are the buckets of counter c that rankings look at now.
func (s *Store) rankedBuckets(c counter.Counter, now time.Time) []string {
	var names []string
	for _, choice := range append([]string{""}, c.Choices...) {
		for _, g := range windows.All {
			for _, previous := range []bool{false, true} {
				names = append(names, s.name(dm.Bucket(c.ID, g.Of(choice), s.opts.Calendar.Window(g, now, previous))))
			}
		}
		if choice != "" {
			names = append(names, s.name(dm.Bucket(c.ID, windows.AllTime.Of(choice), windows.AllTimeStart)))
		}
	}
	return names
}

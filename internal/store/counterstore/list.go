package counterstore

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

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
		c, err := decode(d)
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
	now := s.Now()
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
				names = append(names, s.name(dm.Bucket(c.ID, g.Of(choice), windows.Window(g, now, previous))))
			}
		}
		if choice != "" {
			names = append(names, s.name(dm.Bucket(c.ID, windows.AllTime.Of(choice), windows.AllTimeStart)))
		}
	}
	return names
}

// IsMember reports whether uid is a member of unique counter id, and
// their choice (of a choice counter).
func (s *Store) IsMember(ctx context.Context, id, uid string) (bool, string, error) {
	if counter.ValidateMemberID(uid) != nil {
		return false, "", nil
	}
	pd, err := s.db.Get(ctx, s.name(dm.Member(id, uid)))
	if err != nil || pd == nil {
		return false, "", fs.Classify(err, "read a member of "+id)
	}
	d := fs.DocOf(pd)
	choice := d.Str(dm.FieldChoice)
	return true, choice, d.Err()
}

// ChoiceCounts returns how many members of choice counter c held each
// choice at read time at: one COUNT a choice.
func (s *Store) ChoiceCounts(ctx context.Context, c counter.Counter, at time.Time) (map[string]int64, error) {
	counts := map[string]int64{}
	for _, choice := range c.Choices {
		n, err := s.db.CountOf(ctx, s.ChoiceQuery(c.ID, choice), at)
		if err != nil {
			return nil, fs.Classify(err, "count the members of "+c.ID)
		}
		counts[choice] = n
	}
	return counts, nil
}

// ChoiceQuery is ChoiceCounts' query of one choice, for the index check.
func (s *Store) ChoiceQuery(id, choice string) firestore.Query {
	return s.db.Collection(dm.UnderCounter(id, dm.Members)).Where(dm.FieldChoice, "==", choice)
}

// MemberCount returns how many members unique counter id had at read time
// at: one COUNT aggregation (one billed read per 1,000 members).
func (s *Store) MemberCount(ctx context.Context, id string, at time.Time) (int64, error) {
	n, _, err := s.db.Count(ctx, dm.UnderCounter(id, dm.Members), at)
	return n, fs.Classify(err, "count the members of "+id)
}

// LikedByQuery is the collection-group query of a user's member documents,
// newest first: the unique counters (posts) uid likes. Clients run it
// themselves (the rules let a user list their own); the index is declared.
func (s *Store) LikedByQuery(uid string, limit int) firestore.Query {
	return s.db.CollectionGroup(dm.Members).Where(dm.FieldUID, "==", uid).
		OrderBy(dm.FieldJoinedAt, firestore.Desc).Limit(limit)
}

// MembersQuery is Members' query: a page of counter id's members after the
// uid after, in uid order.
func (s *Store) MembersQuery(id, after string, limit int) firestore.Query {
	q := s.db.Collection(dm.UnderCounter(id, dm.Members)).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q
}

// Members returns up to limit members of unique counter id after the uid
// after, in uid order, and the uid to start the next page after ("" when
// there is none).
func (s *Store) Members(ctx context.Context, id, after string, limit int) ([]counter.Member, string, error) {
	docs, err := s.db.Query(ctx, s.MembersQuery(id, after, limit))
	if err != nil {
		return nil, "", fs.Classify(err, "list the members of "+id)
	}
	out := make([]counter.Member, len(docs))
	for i, pd := range docs {
		d := fs.DocOf(pd)
		out[i] = counter.Member{UID: d.ID, JoinedAt: d.Time(dm.FieldJoinedAt), Choice: d.Str(dm.FieldChoice)}
	}
	next := ""
	if len(docs) == limit {
		next = out[len(out)-1].UID
	}
	return out, next, nil
}

// AppDocumentExists reads a document of the app's, at path, now: whether
// it exists (a kind's keys_in).
func (s *Store) AppDocumentExists(ctx context.Context, path string) (bool, error) {
	doc, err := s.db.Get(ctx, s.name(path))
	if err != nil {
		return false, fs.Classify(err, "read "+path)
	}
	return doc != nil, nil
}

// MembershipsQuery is Memberships' query: uid's member documents, newest
// first (the index of a user's likes), after the membership after.
func (s *Store) MembershipsQuery(uid string, after counter.Membership, limit int) firestore.Query {
	q := s.db.CollectionGroup(dm.Members).Where(dm.FieldUID, "==", uid).
		OrderBy(dm.FieldJoinedAt, firestore.Desc).OrderBy(firestore.DocumentID, firestore.Desc)
	if after.Path != "" {
		q = q.StartAfter(after.JoinedAt, s.db.Doc(after.Path))
	}
	return q.Limit(limit)
}

// Memberships returns uid's memberships after the one after (the zero
// Membership first), at most limit.
func (s *Store) Memberships(ctx context.Context, uid string, after counter.Membership, limit int) ([]counter.Membership, error) {
	docs, err := s.db.Query(ctx, s.MembershipsQuery(uid, after, limit))
	if err != nil {
		return nil, fs.Classify(err, "list the memberships of a user")
	}
	out := make([]counter.Membership, len(docs))
	for i, pd := range docs {
		path := s.db.Path(pd.GetName())
		out[i] = counter.Membership{CounterID: dm.CounterOfMember(path, uid), JoinedAt: fs.DocOf(pd).Time(dm.FieldJoinedAt), Path: path}
	}
	return out, nil
}

// NameMemberKinds gives a page of the member documents of unique counter
// c, of a kind, that kind, in the order of their uids from where the last
// page ended (its progress document, under bound/), at most max, and
// marks the counter once a page comes back short. Member documents
// written before they carried their kind lack it: the query of a user's
// likes by kind would leave them out. It reports whether all are named.
// The counter document is written once, at the end: its listeners and
// roll-ups are not disturbed page after page.
func (s *Store) NameMemberKinds(ctx context.Context, c counter.Counter, max int) (bool, error) {
	max = min(max, MaxNamedMembers)
	progress := s.name(dm.MemberKindsProgress(c.ID))
	pd, err := s.db.Get(ctx, progress)
	if err != nil {
		return false, fs.Classify(err, "read how far the members of "+c.ID+" are named")
	}
	q := s.db.Collection(dm.UnderCounter(c.ID, dm.Members)).OrderBy(firestore.DocumentID, firestore.Asc)
	if after := fs.DocOf(pd).Str(dm.FieldAfter); after != "" {
		q = q.StartAfter(after)
	}
	docs, err := s.db.Query(ctx, q.Limit(max))
	if err != nil {
		return false, fs.Classify(err, "list the members of "+c.ID)
	}
	// Each name on the version read, so a member who left meanwhile is
	// not written back (a race leaves the page to the next run), with the
	// progress.
	var writes []*pb.Write
	for _, pd := range docs {
		if d := fs.DocOf(pd); d.Str(dm.FieldKind) != c.Kind {
			writes = append(writes, fs.UpdateWrite(pd.GetName(), map[string]*pb.Value{dm.FieldKind: fs.StringValue(c.Kind)},
				[]string{dm.FieldKind}, pd.GetUpdateTime().AsTime()))
		}
	}
	done := len(docs) < max
	if !done {
		writes = append(writes, fs.SetWrite(progress, map[string]*pb.Value{dm.FieldAfter: fs.StringValue(fs.DocOf(docs[len(docs)-1]).ID)}))
	} else {
		writes = append(writes, fs.UpdateWrite(s.name(dm.Counter(c.ID)), map[string]*pb.Value{dm.FieldMemberKinds: fs.BoolValue(true)},
			[]string{dm.FieldMemberKinds}, c.Version))
	}
	switch _, err := s.db.Commit(ctx, writes...); {
	case fs.Raced(err), fs.Code(err) == codes.NotFound:
		return false, nil
	case err != nil:
		return false, fs.Classify(err, "name the kind of the members of "+c.ID)
	}
	return done, nil
}

// MaxNamedMembers bounds the member documents one NameMemberKinds names:
// they and its progress are one commit.
const MaxNamedMembers = 400

// Package memberstore keeps the member documents of counters that count
// users (counter.Mode.Members): whether a user is one, a counter's members
// and a user's memberships, the audit's counts, and the names of their
// kinds. Increments write them, in the commits that count them
// (internal/store/incrementstore).
package memberstore

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/erasure"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/retry"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// Store is the member documents of one database.
type Store struct {
	db *fs.DB
}

// New returns the store on base.
func New(base *shared.Base) *Store { return &Store{db: base.DB} }

// IsMember reports whether uid is a member of unique counter id, and
// their choice (of a choice counter).
func (s *Store) IsMember(ctx context.Context, id, uid string) (bool, string, error) {
	if counter.ValidateMemberID(uid) != nil {
		return false, "", nil
	}
	pd, err := s.db.Get(ctx, s.db.Name(dm.Member(id, uid)))
	if err != nil || pd == nil {
		return false, "", fs.Classify(err, "read a member of "+id)
	}
	d := fs.DocOf(pd)
	choice := d.Str(dm.FieldChoice)
	return true, choice, d.Err()
}

// MaxHeldPerQuery is how many counters one query of Holds asks about:
// Firestore's most values of an "in" filter.
const MaxHeldPerQuery = 30

// Holds returns, of counters ids, those uid is a member of, with their
// choice ("" on a counter without choices): a query of uid's member
// documents for each MaxHeldPerQuery of them, each a read per member
// document found (one at least, when none is). Exact: what the queries
// read is what every commit up to their read time left.
func (s *Store) Holds(ctx context.Context, uid string, ids []string) (map[string]string, error) {
	held := map[string]string{}
	if counter.ValidateMemberID(uid) != nil {
		return held, nil // no member document can name them
	}
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	for chunk := range slices.Chunk(ids, MaxHeldPerQuery) { // at once: a page's wait is one query's
		g.Go(func() error {
			docs, err := s.db.Query(ctx, s.HoldsQuery(uid, chunk))
			if err != nil {
				return fs.Classify(err, "read a reader's memberships")
			}
			mu.Lock()
			defer mu.Unlock()
			for _, pd := range docs {
				d := fs.DocOf(pd)
				if id := dm.CounterOfMember(s.db.Path(pd.GetName()), uid); id != "" && d.Str(dm.FieldCounterID) == id {
					held[id] = d.Str(dm.FieldChoice)
				}
			}
			return nil
		})
	}
	return held, g.Wait()
}

// HoldsQuery is Holds' query of counters ids (at most
// MaxHeldPerQuery).
func (s *Store) HoldsQuery(uid string, ids []string) firestore.Query {
	return s.db.CollectionGroup(dm.Members).Where(dm.FieldUID, "==", uid).Where(dm.FieldCounterID, "in", ids)
}

// Audit counts counter c's members at read time at (one COUNT, a billed
// read per 1,000 members), and of a choice counter those holding each
// choice: the truth reconcile's audit brings the shards to.
func (s *Store) Audit(ctx context.Context, c counter.Counter, at time.Time) (counter.Sums, error) {
	n, _, err := s.db.Count(ctx, dm.UnderCounter(c.ID, dm.Members), at)
	sums := counter.Sums{Count: n}
	for _, choice := range c.Choices { // a choice counter's: one COUNT a choice
		if err != nil {
			break
		}
		if sums.Counts == nil {
			sums.Counts = map[string]int64{}
		}
		sums.Counts[choice], err = s.db.CountOf(ctx, s.ChoiceQuery(c.ID, choice), at)
	}
	return sums, fs.Classify(err, "count the members of "+c.ID)
}

// ChoiceQuery is Audit's query of one choice, for the index check.
func (s *Store) ChoiceQuery(id, choice string) firestore.Query {
	return s.db.Collection(dm.UnderCounter(id, dm.Members)).Where(dm.FieldChoice, "==", choice)
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
// c what they lack (unnamed), in the order of their uids from where the
// last page ended (its progress document, under bound/), at most max, and
// marks the counter once a page comes back short. Member documents
// written before they carried their kind lack it: the query of a user's
// likes by kind would leave them out. It reports whether all are named.
// The counter document is written once, at the end: its listeners and
// roll-ups are not disturbed page after page.
func (s *Store) NameMemberKinds(ctx context.Context, c counter.Counter, max int) (bool, error) {
	max = min(max, MaxNamedMembers)
	progress := s.db.Name(dm.MemberKindsProgress(c.ID))
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
		if fields := unnamed(fs.DocOf(pd), c); len(fields) > 0 {
			writes = append(writes, fs.UpdateWrite(pd.GetName(), fields, slices.Sorted(maps.Keys(fields)), pd.GetUpdateTime().AsTime()))
		}
	}
	done := len(docs) < max
	if !done {
		writes = append(writes, fs.SetWrite(progress, map[string]*pb.Value{dm.FieldAfter: fs.StringValue(fs.DocOf(docs[len(docs)-1]).ID)}))
	} else {
		writes = append(writes, fs.UpdateWrite(s.db.Name(dm.Counter(c.ID)), map[string]*pb.Value{dm.FieldMemberKinds: fs.BoolValue(true)},
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

// unnamed are the fields member document d of counter c lacks: its kind,
// and, written before they carried them, its uid and counter id (without
// which a user's memberships and a reader's state in getCounters miss it).
func unnamed(d *fs.Doc, c counter.Counter) map[string]*pb.Value {
	fields := map[string]*pb.Value{}
	if d.Str(dm.FieldKind) != c.Kind {
		fields[dm.FieldKind] = fs.StringValue(c.Kind)
	}
	if d.Str(dm.FieldUID) == "" {
		fields[dm.FieldUID] = fs.StringValue(d.ID)
	}
	if d.Str(dm.FieldCounterID) == "" {
		fields[dm.FieldCounterID] = fs.StringValue(c.ID)
	}
	return fields
}

// MaxNamedMembers bounds the member documents one NameMemberKinds names:
// they and its progress are one commit.
const MaxNamedMembers = 400

// RecordErasure records that uid's erasure began at began, until expires
// (the record's TTL: when no token issued before began lives on), with the
// key that signs its page tokens and the commit's time as written_at; an
// erasure begun again replaces the record of one begun before it (a
// second erasure is a new one, also when it began a moment after the
// record it read: that one's caller begins again on a 400). It returns
// the record that stands. One that began later stands as it is. One that
// landed between this call's read and its commit (the two began at once)
// keeps its key, whose tokens its caller holds, and takes this call's
// start when it is the later: so both calls' promises hold, tokens issued
// before either start refused.
// Its commit is on the condition of the record read, so a begin that lands
// late (its caller gave up, or its instance is gone) never replaces one
// that landed meanwhile. One read more than a plain write.
func (s *Store) RecordErasure(ctx context.Context, uid string, began, expires time.Time, key []byte) (erasure.Record, error) {
	name := s.db.Name(dm.Erasure(uid))
	var stands erasure.Record
	var seen time.Time // the version the try before read (zero: none)
	err := retry.Raced("the erasure of "+uid, func(try int) (bool, error) {
		pd, err := s.db.Get(ctx, name)
		if err != nil {
			return false, fs.Classify(err, "read an erasure")
		}
		ours := erasure.Record{Began: began, Expires: expires, Key: key}
		if pd != nil {
			if stands = recordOf(pd); !stands.Began.Before(began) {
				return false, nil // a later erasure stands: its start covers ours
			}
			if try > 1 && !pd.GetUpdateTime().AsTime().Equal(seen) {
				ours.Key = stands.Key // it landed since this call read: the two began at once
			}
			seen = pd.GetUpdateTime().AsTime()
		}
		fields := map[string]*pb.Value{dm.FieldBeganAt: fs.TimeValue(ours.Began), dm.FieldExpireAt: fs.TimeValue(ours.Expires), dm.FieldKey: fs.BytesValue(ours.Key)}
		w := fs.CreateWrite(name, fields)
		if pd != nil {
			w = fs.ReplaceWrite(name, fields, seen)
		}
		w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldWrittenAt)}
		_, err = s.db.Commit(ctx, w)
		switch fs.Code(err) {
		case codes.OK:
			stands = ours
			return false, nil
		case codes.FailedPrecondition, codes.AlreadyExists:
			return true, nil // another begin landed first: read it
		}
		return false, fs.Classify(err, "record an erasure")
	})
	return stands, err
}

// DropOrphan deletes uid's member document under counter id if, at one
// read time, id has no counter document (deleted by hand: no purge will
// come), and reports whether it did. It counts nothing: the count went
// with the counter's document. Two reads and a delete.
func (s *Store) DropOrphan(ctx context.Context, id, uid string) (bool, error) {
	docs, _, err := s.db.GetAll(ctx, []string{s.db.Name(dm.Counter(id)), s.db.Name(dm.Member(id, uid))}, time.Time{})
	if err != nil {
		return false, fs.Classify(err, "read an orphan member")
	}
	if docs[0] != nil || docs[1] == nil {
		return false, nil
	}
	// On the version read: one changed since is no longer that orphan (a
	// counter made again purges it, or joins it anew).
	_, err = s.db.Commit(ctx, fs.DeleteWrite(docs[1].GetName(), docs[1].GetUpdateTime().AsTime()))
	if c := fs.Code(err); c == codes.FailedPrecondition || c == codes.NotFound {
		return false, nil // changed or deleted since: by a purge, or an erasure beside
	}
	return err == nil, fs.Classify(err, "delete an orphan member")
}

// recordOf is an erasure record's document as read.
func recordOf(pd *pb.Document) erasure.Record {
	d := fs.DocOf(pd)
	return erasure.Record{Began: d.Time(dm.FieldBeganAt), Expires: d.Time(dm.FieldExpireAt), Key: d.Bytes(dm.FieldKey)}
}

// Erasure reads uid's latest erasure record (a zero Began: none). One
// read.
func (s *Store) Erasure(ctx context.Context, uid string) (erasure.Record, error) {
	pd, err := s.db.Get(ctx, s.db.Name(dm.Erasure(uid)))
	if err != nil || pd == nil {
		return erasure.Record{}, fs.Classify(err, "read an erasure")
	}
	return recordOf(pd), nil
}

// ErasuresSince returns the erasures recorded after since: each user's
// uid and when their erasure began.
func (s *Store) ErasuresSince(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	docs, err := s.db.Query(ctx, s.ErasuresQuery(since))
	if err != nil {
		return nil, fs.Classify(err, "read the erasures")
	}
	out := map[string]time.Time{}
	for _, pd := range docs {
		d := fs.DocOf(pd)
		out[d.ID] = d.Time(dm.FieldBeganAt)
	}
	return out, nil
}

// ErasuresQuery is ErasuresSince's query.
func (s *Store) ErasuresQuery(since time.Time) firestore.Query {
	return s.db.Collection(dm.Erasures).Where(dm.FieldWrittenAt, ">", since)
}

package firestoredb

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/errs"
)

// Members of unique counters: counters/{id}/members/{uid}, one document
// per user counted, created or deleted in the commit that counts it (see
// Apply). The count of a unique counter is therefore always its number of
// members, which reconcile checks (Audit).

// member is a member document as read before a commit.
type member struct {
	exists  bool
	updated time.Time
}

func (b *base) memberName(id, uid string) string {
	return b.db.name(underCounter(id, MembersCollection) + "/" + uid)
}

// ValidateMemberID checks that a uid can name a member document (Firebase
// uids are up to 128 characters, but custom tokens may carry any string).
func ValidateMemberID(uid string) error {
	switch {
	case uid == "":
		return errs.New(errs.Unauthenticated, "a unique counter counts users: sign in (Authorization: Bearer <Firebase ID token>)")
	case len(uid) > 128 || strings.Contains(uid, "/") || uid == "." || uid == ".." ||
		len(uid) >= 4 && strings.HasPrefix(uid, "__") && strings.HasSuffix(uid, "__"):
		return errs.New(errs.InvalidArgument, "the caller's uid cannot name a member document of a unique counter")
	}
	return nil
}

// IsMember reports whether uid is a member of unique counter id.
func (s *Rollups) IsMember(ctx context.Context, id, uid string) (bool, error) {
	if ValidateMemberID(uid) != nil {
		return false, nil
	}
	d, err := s.db.get(ctx, s.memberName(id, uid))
	if err != nil {
		return false, classify(err, "read a member of "+id)
	}
	return d != nil, nil
}

// readMembers reads the member documents of the users of the pending ops.
func (p *incrementCommit) readMembers(ctx context.Context) error {
	seen := map[string]bool{}
	var users, names []string
	for _, i := range p.pending {
		u := p.ops[i].User
		if err := ValidateMemberID(u); err != nil {
			return err // the handler refuses such ops; this is a bug
		}
		if !seen[u] {
			seen[u] = true
			users, names = append(users, u), append(names, p.s.memberName(p.c.ID, u))
		}
	}
	docs, _, err := p.s.db.getAt(ctx, names, time.Time{})
	if err != nil {
		return classify(err, "read the members of "+p.c.ID)
	}
	p.members = map[string]member{}
	for i, d := range docs {
		p.members[users[i]] = member{exists: d != nil, updated: d.GetUpdateTime().AsTime()}
	}
	return nil
}

// memberWrites plays the pending ops of a unique counter in arrival order
// over the members read, sets each op's outcome and the shard's change,
// and returns the member documents to create or delete, each with a
// precondition on what was read: another instance's change in between
// fails the commit, which then reads them again.
func (p *incrementCommit) memberWrites() []*pb.Write {
	state := map[string]bool{}
	for u, m := range p.members {
		state[u] = m.exists
	}
	p.net = 0
	var changed []int
	for _, i := range p.pending {
		op := p.ops[i]
		r := IncrementResult{Delta: op.Delta, Shard: -1}
		if in := op.Delta > 0; in != state[op.User] {
			state[op.User] = in
			r.Changed = true
			changed = append(changed, i)
			// ±1 whatever the delta: the count is the number of members
			// (the handlers refuse other deltas on unique counters).
			p.net += int64(cmp.Compare(op.Delta, 0))
		}
		r.Member = state[op.User]
		p.outcome[i] = r
	}
	p.shardWrite = p.net != 0
	if p.shardWrite {
		for _, i := range changed {
			r := p.outcome[i]
			r.Shard = p.shard
			p.outcome[i] = r
		}
	}
	var writes []*pb.Write
	for _, u := range slices.Sorted(maps.Keys(state)) {
		m := p.members[u]
		switch name := p.s.memberName(p.c.ID, u); {
		case state[u] && !m.exists:
			// uid and counter_id: a user's likes are one collection-group
			// query (members where uid == me).
			w := createWrite(name, map[string]*pb.Value{fieldUID: stringValue(u), fieldCounterID: stringValue(p.c.ID)})
			w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldJoinedAt)}
			writes = append(writes, w)
		case !state[u] && m.exists:
			writes = append(writes, deleteWrite(name, m.updated))
		}
	}
	return writes
}

// MemberCount returns how many members unique counter id had at read time
// at: one COUNT aggregation (one billed read per 1,000 members).
func (s *Rollups) MemberCount(ctx context.Context, id string, at time.Time) (int64, error) {
	n, _, err := s.db.count(ctx, underCounter(id, MembersCollection), at)
	return n, classify(err, "count the members of "+id)
}

// LikedByQuery is the collection-group query of a user's member documents,
// newest first: the unique counters (posts) uid likes. Clients run it
// themselves (the rules let a user list their own); the index is declared.
func (s *Counters) LikedByQuery(uid string, limit int) firestore.Query {
	return s.db.client.CollectionGroup(MembersCollection).Where(fieldUID, "==", uid).
		OrderBy(fieldJoinedAt, firestore.Desc).Limit(limit)
}

// MembersQuery is Members' query: a page of counter id's members after the
// uid after, in uid order.
func (s *Counters) MembersQuery(id, after string, limit int) firestore.Query {
	q := s.db.client.Collection(underCounter(id, MembersCollection)).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q
}

// Member is one member of a unique counter.
type Member struct {
	UID      string
	JoinedAt time.Time
}

// Members returns up to limit members of unique counter id after the uid
// after, in uid order, and the uid to start the next page after ("" when
// there is none).
func (s *Counters) Members(ctx context.Context, id, after string, limit int) ([]Member, string, error) {
	docs, err := s.db.query(ctx, s.MembersQuery(id, after, limit))
	if err != nil {
		return nil, "", classify(err, "list the members of "+id)
	}
	out := make([]Member, len(docs))
	for i, pd := range docs {
		d := docOf(pd)
		out[i] = Member{UID: d.id, JoinedAt: d.time(fieldJoinedAt)}
	}
	next := ""
	if len(docs) == limit {
		next = out[len(out)-1].UID
	}
	return out, next, nil
}

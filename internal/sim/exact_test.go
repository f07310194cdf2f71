package sim

import (
	"slices"
	"strings"
	"time"

	dm "github.com/shardcount/shardcount/internal/datamodel"
)

// Exactness at quiescence: what a counter holds is what its acknowledged
// requests (and possibly its unacknowledged ones) added, nothing else.

// generation is one life of an idempotency key's record: the commit that
// created it (or replaced an expired one) and the delta it holds.
type generation struct {
	rec   commitRec
	delta int64
}

// generations returns the lives of counter id's record of (user, key)
// from from on: each commit that wrote it (a record is only ever created,
// or replaced once expired).
func (w *world) generations(id, user, key string, from time.Time) []generation {
	name := root + "counters/" + id + "/idempotency_keys/" + dm.KeyHash(user, key)
	var out []generation
	for _, rec := range w.commits {
		if rec.at.Before(from) {
			continue
		}
		for _, ch := range rec.changes {
			if ch.Name == name && ch.After != nil {
				out = append(out, generation{rec, field(ch.After, "delta").GetIntegerValue()})
			}
		}
	}
	return out
}

// at is the generation of the record when o ended: the one it answered
// from, if it was answered.
func at(gens []generation, o *op) (generation, bool) {
	var g generation
	ok := false
	for _, x := range gens {
		if !x.rec.when.After(o.end) {
			g, ok = x, true
		}
	}
	return g, ok
}

// mine reports whether o may count in counter id's incarnation k: it
// started during it, or while no document was there (a first use may
// create k), or while the id was deleted and then read k's document (it
// went on with the counter it found). One that started on an earlier
// live incarnation, or went on with what it knew of it, never counts in
// k: its counter was another.
func (w *world) mine(o *op, k int) bool {
	return o.inc == k || o.inc == k-1 && (o.absent || !o.live && w.readSince(o, k))
}

// counterRead is an instance's read or write of a counter document, and
// when it applied.
type counterRead struct {
	inst int
	at   time.Time
}

// readSince says whether o's instance read or wrote its counter's
// document once incarnation k was created, while o ran: begun on a
// deleted counter, o may have gone on with the next one (the read it
// waited for may be another request's, or the instance created it).
func (w *world) readSince(o *op, k int) bool {
	created := w.creations(o.counter)
	if len(created) < k {
		return false
	}
	for _, r := range w.counterReads[o.counter] {
		if r.inst == w.serverOf(o.inst, o.fn) && !r.at.Before(created[k-1].when) && (!o.done || !r.at.After(o.end)) {
			return true
		}
	}
	return false
}

// increments are the increment requests (batch items included) of
// counter id.
func (w *world) increments(id string) []*op {
	var out []*op
	for _, o := range w.ops {
		if o.fn == "incrementCounter" && o.counter == id {
			out = append(out, o)
		}
	}
	return out
}

// base is what counter id's incarnation created held before the
// increments that count on top: the value its last reset (or a planted
// shard) left, and that commit; 0 and none otherwise.
func (w *world) base(id string, created commitRec) (int64, commitRec) {
	var since commitRec
	for _, rec := range w.commits {
		if !rec.at.Before(created.at) && (resetOf(rec, id) || w.planted[rec.at]) {
			since = rec
		}
	}
	if since.at.IsZero() {
		return 0, since
	}
	return w.shardSum(id, since.at), since
}

// checkExact: every acknowledged increment of the counter's last
// incarnation counts exactly once (a keyed one, however often it was
// retried, as its record says), an unacknowledged one at most once, and
// nothing else counts: not the increments of an earlier counter of the
// same id. After a reset, the value its commit left is the base.
func (w *world) checkExact(id string, sum int64) {
	created := w.creations(id)
	k := len(created)
	if k == 0 {
		return
	}
	base, since := w.base(id, created[k-1])
	lo, hi := base, base
	raced := false // by an increment that may have committed before the reset's read or after
	keyed := map[string][]*op{}
	for _, o := range w.increments(id) {
		if o.key != "" {
			keyed[o.user+"/"+o.key] = append(keyed[o.user+"/"+o.key], o)
			continue
		}
		if !w.mine(o, k) {
			continue // counts nowhere in k: the sum check catches it if it did
		}
		switch {
		case o.unknown(): // applied or not, before the reset or after
			lo, hi = lo+min(0, o.delta), hi+max(0, o.delta)
		case !o.ok():
		case o.end.Before(since.when): // in the reset's base
		case !since.at.IsZero() && !o.start.After(since.when):
			raced = true
			lo, hi = lo+min(0, o.delta), hi+max(0, o.delta)
		default:
			lo, hi = lo+o.delta, hi+o.delta
		}
	}
	if raced {
		w.undecided++ // the reset's base, within the racing increments' sum
	}
	for _, group := range keyed {
		first := group[0]
		gens := w.generations(id, first.user, first.key, created[k-1].at)
		for _, g := range gens {
			if g.rec.at.After(since.at) {
				lo, hi = lo+g.delta, hi+g.delta
			}
		}
		for _, o := range group {
			g, ok := at(gens, o)
			switch {
			case !w.mine(o, k):
				if len(gens) > 0 && o.ok() && !slices.ContainsFunc(group, func(x *op) bool { return w.mine(x, k) }) {
					w.problem("%s, begun on an earlier counter %s, is recorded in the next one", o, id)
				}
			case o.ok() && !ok:
				w.problem("%s was acknowledged, and its key has no record in counter %s", o, id)
			case o.ok() && g.delta != o.delta:
				w.problem("%s was acknowledged with delta %d; its key's record holds %d", o, o.delta, g.delta)
			case o.code() == "ALREADY_EXISTS" && (!ok || g.delta == o.delta):
				w.problem("%s answered 409 for a key used with no other delta", o)
			}
		}
	}
	if sum < lo || sum > hi {
		w.problem("counter %s#%d holds %d; from %d at %s, its increments add up to between %d and %d", id, k, sum, base, w.rel(since.when), lo, hi)
	}
}

// checkMembers: on a unique counter's last incarnation, every user's
// answers fit one serial order of their requests (they are linearizable):
// each like and unlike, taken at some instant while it ran, answers what
// the user's membership was (changed) and is (member) there; a request
// whose outcome is unknown may have been taken or not; a keyed request's
// attempts are one request, which answers as its record holds; and the
// membership the member document shows after each commit, and at the end,
// is the one of that order.
func (w *world) checkMembers(id string) {
	created := w.creations(id)
	w.checkMembersOf(id, len(created), created[len(created)-1])
}

// checkMembersOf is checkMembers of incarnation k, created by from (none:
// k is 0, of an id no counter was created for).
func (w *world) checkMembersOf(id string, k int, from commitRec) {
	for _, u := range users {
		name := root + "counters/" + id + "/members/" + u
		var ops []*lop
		forever := w.endAt.Add(time.Hour)
		byKey := map[string]*lop{}
		for _, o := range w.increments(id) {
			if o.user != u || !w.mine(o, k) || o.done && o.status >= 400 && o.status < 500 {
				continue
			}
			l := &lop{start: o.start, end: o.end, join: o.delta > 0, optional: !o.ok(), what: o.String()}
			if !o.done || o.unknown() {
				l.end = forever // it may apply up to its commit's deadline after it ended
				if o.done {
					l.end = o.end.Add(deadline)
				}
			}
			if o.ok() {
				l.member, l.changed = *o.answer.Member, *o.answer.Changed
			}
			if o.key != "" {
				w.checkRecord(o, id, from.at)
				if g := byKey[o.key]; g != nil { // another attempt: one request
					g.start, g.end = minTime(g.start, l.start), maxTime(g.end, l.end)
					if g.optional && !l.optional {
						g.optional, g.member, g.changed, g.what = false, l.member, l.changed, l.what
					}
					continue
				}
				byKey[o.key] = l
			}
			ops = append(ops, l)
		}
		// An erasure of the user may have removed them at any instant one
		// of its calls ran.
		for _, c := range w.erasedWhile(u) {
			start, end := c.window(forever)
			ops = append(ops, &lop{start: start, end: end, optional: true, what: c.String()})
		}
		// What the member document showed: after each commit of this
		// incarnation that changed it, and at the end.
		for _, rec := range w.commits {
			if rec.at.Before(from.at) {
				continue
			}
			for _, ch := range rec.changes {
				if ch.Name == name {
					ops = append(ops, &lop{start: rec.when, end: rec.when, read: true, member: ch.After != nil, what: "the member document at " + w.rel(rec.when)})
				}
			}
		}
		ops = append(ops, &lop{start: forever, end: forever, read: true, member: w.memberAt(name, time.Time{}), what: "the member document at the end"})
		switch ok, judged := linearizable(ops); {
		case !judged:
			w.undecided++ // too many requests of unknown outcome at once to search every order
		case !ok:
			var lines []string
			for _, l := range ops {
				lines = append(lines, l.String(w))
			}
			w.problem("%s's likes and unlikes of %s fit no serial order:\n  %s", u, id, strings.Join(lines, "\n  "))
		}
	}
}

// checkRecord: a keyed like or unlike that was acknowledged (a replay
// too) answers what its key's record, written in the commit that applied
// it, holds; only an unlike that changed nothing of a counter nobody used
// writes no record (nothing at all).
func (w *world) checkRecord(o *op, id string, from time.Time) {
	if !o.ok() || o.answer.Member == nil {
		return
	}
	name := root + "counters/" + id + "/idempotency_keys/" + dm.KeyHash(o.user, o.key)
	for _, rec := range w.commits {
		if rec.at.Before(from) {
			continue
		}
		for _, ch := range rec.changes {
			if ch.Name != name || ch.Before != nil || ch.After == nil {
				continue
			}
			if member, changed := field(ch.After, "member").GetBooleanValue(), field(ch.After, "changed").GetBooleanValue(); member != *o.answer.Member || changed != *o.answer.Changed {
				w.problem("%s answered member=%v changed=%v; its key's record holds member=%v changed=%v", o, *o.answer.Member, *o.answer.Changed, member, changed)
			}
			return
		}
	}
	if !(o.absent && !*o.answer.Changed) {
		w.problem("%s answered member=%v changed=%v, and its key has no record in counter %s: a retry with it would apply again", o, *o.answer.Member, *o.answer.Changed, id)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// memberAt says whether the member document name existed at t
// (Firestore's clock).
func (w *world) memberAt(name string, t time.Time) bool {
	for _, d := range w.model.Documents(name, t) {
		if d.GetName() == name {
			return true
		}
	}
	return false
}

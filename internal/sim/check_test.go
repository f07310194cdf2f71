package sim

import (
	"fmt"
	"strconv"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/windows"
)

// The invariants. Those that hold at every commit are checked in
// onCommit; the others when an operation ends or at quiescence.

// under returns the documents of a counter's collection as of at (zero:
// now).
func (w *world) under(id, collection string, at time.Time) []*pb.Document {
	return w.model.Documents(root+"counters/"+id+"/"+collection+"/", at)
}

// shardSum is the sum of a counter's shards as of at.
func (w *world) shardSum(id string, at time.Time) int64 {
	var s int64
	for _, d := range w.under(id, firestoredb.ShardsCollection, at) {
		s += field(d, "count").GetIntegerValue()
	}
	return s
}

// liveDuring says whether counter id was live at some time in [from, to].
func (w *world) liveDuring(id string, from, to time.Time) bool {
	if isLive(w.counterDoc(id, from)) {
		return true
	}
	for _, rec := range w.commits {
		if rec.at.Before(from) || rec.at.After(to) {
			continue
		}
		for _, ch := range rec.changes {
			if cid, coll, _ := counterOf(ch.Name); cid == id && coll == "" && isLive(ch.After) {
				return true
			}
		}
	}
	return false
}

// checkAlways holds at every commit: a live counter's value stays within
// ±(2^53 − 1), and a live unique counter's value is its number of members.
func (w *world) checkAlways(id string) {
	d := w.counterDoc(id, time.Time{})
	if !isLive(d) {
		return
	}
	sum := w.shardSum(id, time.Time{})
	if !counter.InBound(sum) {
		w.problem("counter %s holds %d, past ±(2^53 − 1)", id, sum)
	}
	if field(d, "unique").GetBooleanValue() {
		if members := len(w.under(id, firestoredb.MembersCollection, time.Time{})); int64(members) != sum {
			w.problem("unique counter %s counts %d with %d members", id, sum, members)
		}
	}
}

// checkPurge holds at every commit: documents under a counter are
// deleted only while it is not live (a purge, by a deletion, a creation
// over a tombstone or reconcile), but for a member by an unlike and a
// shard by a shrink's merge, which adds its count to another shard in the
// same commit. A purge that went on after the id was created again
// deleted the new counter's documents.
func (w *world) checkPurge(by *op, changes []fsmodel.Change, at time.Time) {
	merges := map[string]bool{}
	for _, ch := range changes {
		if id, coll, _ := counterOf(ch.Name); coll == firestoredb.ShardsCollection && ch.After != nil {
			merges[id] = true
		}
	}
	for _, ch := range changes {
		id, coll, _ := counterOf(ch.Name)
		unlike := coll == firestoredb.MembersCollection && by != nil && by.kind == "flush"
		merge := coll == firestoredb.ShardsCollection && merges[id]
		if coll != "" && ch.After == nil && !unlike && !merge && isLive(w.counterDoc(id, at)) {
			w.problem("%v deleted %s of the live counter %s#%d", by, ch.Name[len(root):], id, w.incarnation[id])
		}
	}
}

// checkStrong: a strong read that answers reads a live counter, and its
// answer is the sum of the shards at its read time.
func (w *world) checkStrong(o *op) {
	if o.err != nil {
		return
	}
	switch d := w.counterDoc(o.counter, o.asOf); {
	case d == nil && o.value == 0:
		if _, ok := kinds.Of(o.counter); ok {
			return // of a kind, not used yet: 0
		}
		fallthrough
	case !isLive(d):
		w.problem("%s answered %d as of %s for a counter absent or deleted then", o, o.value, w.rel(o.asOf))
		return
	}
	if sum := w.shardSum(o.counter, o.asOf); sum != o.value {
		w.problem("%s answered %d as of %s; the shards held %d", o, o.value, w.rel(o.asOf), sum)
	}
}

// checkReset: a reset that answers sets the value as of its read time R:
// at its commit C, the shards hold its target plus what the other commits
// between R and C added, and nothing else (another reset's change in
// between makes a reset land twice).
func (w *world) checkReset(o *op) {
	if o.err != nil || len(o.commits) == 0 {
		return
	}
	c := o.commits[len(o.commits)-1]
	want := o.value
	for _, rec := range w.commits {
		if !rec.at.After(o.asOf) || !rec.at.Before(c) || rec.by != nil && rec.by.kind == "reset" {
			continue // what is not an increment in between (another reset) does not count on top
		}
		want += shardDelta(rec.changes, o.counter)
	}
	if got := w.shardSum(o.counter, c); got != want {
		w.problem("%s to %d as of %s: the shards held %d at its commit (%s), want %d", o, o.value, w.rel(o.asOf), got, w.rel(c), want)
	}
}

// shardDelta is what a commit's changes added to a counter's shards.
func shardDelta(changes []fsmodel.Change, id string) int64 {
	var d int64
	for _, ch := range changes {
		if cid, coll, _ := counterOf(ch.Name); cid == id && coll == firestoredb.ShardsCollection {
			d += field(ch.After, "count").GetIntegerValue() - field(ch.Before, "count").GetIntegerValue()
		}
	}
	return d
}

// checkContention: an increment or like fails for contention only when its
// own member or idempotency record was written by another commit while its
// flush ran; another user's toggling never fails it.
func (w *world) checkContention(o, flush *op) {
	if o.err == nil || flush.faulted || !errs.Is(o.err, errs.Unavailable) {
		return
	}
	for _, rec := range w.commits {
		if rec.by == flush || rec.at.Before(flush.start) || rec.at.After(flush.end) {
			continue
		}
		for _, ch := range rec.changes {
			if id, coll, doc := counterOf(ch.Name); id == o.counter && coll == firestoredb.MembersCollection && doc == o.user {
				return // its member changed under it
			}
		}
		if o.key != "" && rec.by != nil && rec.by.kind == "flush" {
			for _, other := range rec.by.batch {
				if other.user == o.user && other.key == o.key {
					return // its key was being recorded elsewhere
				}
			}
		}
	}
	w.problem("%s failed (%v) in a flush with no fault, though nothing wrote its member or key meanwhile", o, o.err)
}

// checkQuiescence runs once everything is delivered and reconciled.
func (w *world) checkQuiescence() {
	for _, id := range w.counters {
		d := w.counterDoc(id, time.Time{})
		if !isLive(d) {
			w.checkPurged(id)
			continue
		}
		sum := w.shardSum(id, time.Time{})
		if count := field(d, "count").GetIntegerValue(); count != sum {
			w.problem("counter %s's roll-up says %d, its shards %d, after reconcile", id, count, sum)
		}
		for _, g := range windows.All {
			var total int64
			for _, b := range w.under(id, firestoredb.WindowsCollection, time.Time{}) {
				if field(b, "granularity").GetStringValue() == string(g) {
					total += field(b, "count").GetIntegerValue()
				}
			}
			if total != sum {
				w.problem("counter %s's %s buckets sum to %d, its total is %d", id, g, total, sum)
			}
		}
		if !field(d, "unique").GetBooleanValue() {
			w.checkExact(id, sum)
		}
	}
}

// checkPurged: a counter deleted and purged once no late write could land
// leaves nothing under its id but roll-up slots that a late event claimed
// after its tombstone was dropped, which expire (TTL) an hour after their
// slot.
func (w *world) checkPurged(id string) {
	for _, d := range w.model.Documents(root+"counters/"+id+"/", time.Time{}) {
		_, coll, due := counterOf(d.GetName())
		ns, _ := strconv.ParseInt(due, 10, 64)
		expires := field(d, "expire_at").GetTimestampValue().AsTime()
		late := d.GetCreateTime().AsTime().After(w.dropped[id])
		if coll != firestoredb.SlotsCollection || !late || !expires.Equal(time.Unix(0, ns).Add(time.Hour)) {
			w.problem("deleted counter %s left %s", id, d.GetName()[len(root):])
		}
	}
}

// checkExact: every acknowledged increment of the counter's current
// incarnation counts exactly once (a keyed one, however often it was
// retried), an unacknowledged one at most once, and nothing else counts:
// not the increments of an earlier counter of the same id. After a reset,
// the value its last commit left is the base, and the increments
// committed after it count on top.
func (w *world) checkExact(id string, sum int64) {
	inc := w.incarnation[id]
	var base int64
	var since time.Time // the base's commit: none but the creation (a first use counts in it)
	if w.wasReset[fmt.Sprintf("%s#%d", id, inc)] {
		since = w.createdAt[id][len(w.createdAt[id])-1]
		for _, rec := range w.commits {
			if rec.by != nil && rec.by.kind == "reset" && rec.by.counter == id && rec.at.After(since) {
				since = rec.at
			}
		}
		base = w.shardSum(id, since)
	}
	lo, hi, acked := base, base, int64(0)
	keyed := map[string][]*op{}
	for _, o := range w.ops {
		if o.counter != id || o.incarnation != inc || o.kind != "increment" {
			continue
		}
		switch when := committed(o, since); {
		case when == straddles:
			return // its flush committed both before and after the base: not decidable here
		case when == before:
			if o.key != "" {
				keyed[o.user+"/"+o.key] = nil // counted in the base; its retries replay
			}
			continue
		}
		if o.key != "" {
			if group, ok := keyed[o.user+"/"+o.key]; ok && group == nil {
				continue
			}
			keyed[o.user+"/"+o.key] = append(keyed[o.user+"/"+o.key], o)
			continue
		}
		lo, hi, acked = addOutcome(lo, hi, acked, o.delta, []*op{o})
	}
	for _, group := range keyed {
		if group != nil {
			lo, hi, acked = addOutcome(lo, hi, acked, group[0].delta, group)
		}
	}
	if sum < lo || sum > hi {
		w.problem("counter %s#%d holds %d; from %d at %s, its increments add up to between %d and %d (%d acknowledged)", id, inc, sum, base, w.rel(since), lo, hi, acked)
	}
}

type when int

const (
	after when = iota // every commit of its flush came after the base (or none did)
	before
	straddles
)

// committed says when o's flush committed, against the base at since.
func committed(o *op, since time.Time) when {
	var early, late bool
	for _, c := range o.commits {
		if c.After(since) {
			late = true
		} else {
			early = true
		}
	}
	switch {
	case early && late:
		return straddles
	case early:
		return before
	}
	return after
}

// addOutcome adds what the attempts of one increment may have added: its
// delta once if one was acknowledged, 0 or its delta if one failed in a
// way that may hide a commit, 0 otherwise.
func addOutcome(lo, hi, acked int64, delta int64, attempts []*op) (int64, int64, int64) {
	unknown := false
	for _, o := range attempts {
		switch {
		case o.done && o.err == nil:
			return lo + delta, hi + delta, acked + delta
		case !o.done || errs.Is(o.err, errs.Unavailable) || errs.CodeOf(o.err) == errs.Internal:
			unknown = true
		}
	}
	if unknown {
		return lo + min(0, delta), hi + max(0, delta), acked
	}
	return lo, hi, acked
}

package sim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/windows"
)

// The invariants. Those that hold at every commit are checked in
// onCommit; the others when a request is answered or at quiescence. A case
// a checker cannot judge is counted (undecided) and reported, never
// passed silently.

// under returns the documents of a counter's collection as of at (zero:
// now).
func (w *world) under(id, collection string, at time.Time) []*pb.Document {
	return w.model.Documents(root+"counters/"+id+"/"+collection+"/", at)
}

// shardSum is the sum of a counter's shards as of at.
func (w *world) shardSum(id string, at time.Time) int64 {
	if viewers := w.viewersOf(id, at); viewers != nil {
		return viewers.Estimate() // a distinct counter's: its shards' sketches merged
	}
	var s int64
	for _, d := range w.under(id, "shards", at) {
		s += field(d, "count").GetIntegerValue()
	}
	return s
}

// viewersOf is a distinct counter's shards' sketches merged as of at; nil
// for a counter whose shards keep counts.
func (w *world) viewersOf(id string, at time.Time) *distinct.Sketch {
	return w.merged(id, w.under(id, "shards", at))
}

// merged are the sketches of docs (of counter id) merged, nil when none
// holds one.
func (w *world) merged(id string, docs []*pb.Document) *distinct.Sketch {
	var viewers *distinct.Sketch
	for _, d := range docs {
		b := field(d, "sketch")
		if b == nil {
			continue
		}
		if viewers == nil {
			viewers = distinct.New()
		}
		sk, err := distinct.Parse(b.GetBytesValue())
		if err == nil {
			err = viewers.Merge(sk)
		}
		if err != nil {
			w.problem("counter %s's %s holds a sketch that does not merge: %v", id, d.GetName(), err)
		}
	}
	return viewers
}

// state is counter id's incarnation at t (how many times its document
// became live by then), whether it was live, and whether no document was
// there at all; t is in the instances' clock, as every time of a request.
func (w *world) state(id string, t time.Time) (inc int, live, absent bool) {
	for _, c := range w.creations(id) {
		if !c.when.After(t) {
			inc++
		}
	}
	d := w.counterDoc(id, w.fs(t))
	return inc, isLive(d), d == nil
}

// creations are the commits that made counter id's document live.
func (w *world) creations(id string) []commitRec {
	var out []commitRec
	for _, rec := range w.commits {
		for _, ch := range rec.changes {
			if cid, coll, _ := counterOf(ch.Name); cid == id && coll == "" && isLive(ch.After) && !isLive(ch.Before) {
				out = append(out, rec)
			}
		}
	}
	return out
}

// liveDuring says whether counter id was live at some time in [from, to]
// (the instances' clock).
func (w *world) liveDuring(id string, from, to time.Time) bool {
	if isLive(w.counterDoc(id, w.fs(from))) {
		return true
	}
	for _, rec := range w.commits {
		if rec.when.Before(from) || rec.when.After(to) {
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
		if members := len(w.under(id, "members", time.Time{})); int64(members) != sum {
			w.problem("unique counter %s counts %d with %d members", id, sum, members)
		}
		w.checkChoicesAlways(id, d)
	}
}

// checkPurge holds at every commit: documents under a counter are
// deleted only while it is not live (a purge, by a deletion, a creation
// over a tombstone or reconcile), but for a member by an unlike and a
// shard by a shrink's merge, which adds its count to another shard in the
// same commit. A purge that went on after the id was created again
// deleted the new counter's documents.
func (w *world) checkPurge(changes []fsmodel.Change, at time.Time) {
	merges := map[string]bool{}
	for _, ch := range changes {
		if id, coll, _ := counterOf(ch.Name); coll == "shards" && ch.After != nil {
			merges[id] = true
		}
	}
	for _, ch := range changes {
		id, coll, _ := counterOf(ch.Name)
		unlike := coll == "members"
		merge := coll == "shards" && merges[id]
		if coll != "" && ch.After == nil && !unlike && !merge && isLive(w.counterDoc(id, at)) {
			w.problem("a commit deleted %s of the live counter %s", ch.Name[len(root):], id)
		}
	}
}

// checkCreate: a creation answers ALREADY_EXISTS only if the counter was
// live at some time while it ran.
func (w *world) checkCreate(o *op) {
	if o.code() == "ALREADY_EXISTS" && !w.liveDuring(o.counter, o.start, o.end) {
		w.problem("%s answered ALREADY_EXISTS, and no counter %s was live while it ran", o, o.counter)
	}
}

// checkDelete: a deletion that answers leaves the counter not live.
func (w *world) checkDelete(o *op) {
	if o.ok() && isLive(w.counterDoc(o.counter, time.Time{})) {
		if inc, _, _ := w.state(o.counter, time.Now()); inc == o.inc {
			w.problem("%s answered success, and the counter is still live", o)
		}
	}
}

// checkStrong: a strong read that answers reads a live counter (or a
// kind's, not used yet: 0), and its answer is the sum of the shards at
// its read time.
func (w *world) checkStrong(o *op) {
	if !o.ok() {
		return
	}
	w.checkStrongCounts(o)
	at := o.asOf()
	switch d := w.counterDoc(o.counter, at); {
	case d == nil && o.answer.Count == 0 && strings.Contains(o.counter, ":"):
		return // of a kind, not used yet: 0
	case !isLive(d):
		w.problem("%s answered %d as of %s for a counter absent or deleted then", o, o.answer.Count, w.rel(at))
		return
	}
	if sum := w.shardSum(o.counter, at); sum != o.answer.Count {
		w.problem("%s answered %d as of %s; the shards held %d", o, o.answer.Count, w.rel(at), sum)
	}
}

// resetOf reports whether a commit is a reset's of counter id: it stamps
// the counter document's reset_at.
func resetOf(rec commitRec, id string) bool {
	for _, ch := range rec.changes {
		if cid, coll, _ := counterOf(ch.Name); cid == id && coll == "" &&
			!field(ch.After, "reset_at").GetTimestampValue().AsTime().Equal(field(ch.Before, "reset_at").GetTimestampValue().AsTime()) {
			return true
		}
	}
	return false
}

// shardDelta is what a commit's changes added to a counter's shards.
func shardDelta(changes []fsmodel.Change, id string) int64 {
	var d int64
	for _, ch := range changes {
		if cid, coll, _ := counterOf(ch.Name); cid == id && coll == "shards" {
			d += field(ch.After, "count").GetIntegerValue() - field(ch.Before, "count").GetIntegerValue()
		}
	}
	return d
}

// checkReset: a reset that answers set the value as of its read time R:
// the counter held it then (nothing to commit), or one reset commit C of
// the counter, after R and before its answer,
// leaves the shards holding its target plus what the other commits
// between R and C added, and nothing else (another reset's change in
// between would make it land twice).
func (w *world) checkReset(o *op) {
	if !o.ok() {
		return
	}
	r := o.asOf()
	if w.shardSum(o.counter, r) == o.answer.Count {
		return // the counter held it already: nothing to commit
	}
	for i, rec := range w.commits {
		if rec.at.Before(r) || rec.when.After(o.end) || !resetOf(rec, o.counter) {
			continue
		}
		want := o.answer.Count
		for _, other := range w.commits[:i] {
			if other.at.After(r) && !resetOf(other, o.counter) {
				want += shardDelta(other.changes, o.counter)
			}
		}
		if w.shardSum(o.counter, rec.at) == want {
			return
		}
	}
	w.problem("%s to %d as of %s: no reset commit between its read and its answer leaves the counter at it", o, o.answer.Count, w.rel(r))
}

// checkQuiescence runs once everything is delivered and reconciled, on
// every counter a request named.
func (w *world) checkQuiescence() {
	for _, id := range w.ids() {
		d := w.counterDoc(id, time.Time{})
		if len(w.creations(id)) == 0 {
			w.checkNeverCounted(id)
		}
		if !isLive(d) {
			w.checkPurged(id)
			continue
		}
		sum := w.shardSum(id, time.Time{})
		if count := field(d, "count").GetIntegerValue(); count != sum {
			w.problem("counter %s's roll-up says %d, its shards %d, after reconcile", id, count, sum)
		}
		for _, g := range windows.All {
			if field(d, "distinct").GetBooleanValue() {
				break // its buckets keep sketches, not counts (checkViewers)
			}
			var total int64
			for _, b := range w.under(id, "windows", time.Time{}) {
				if field(b, "granularity").GetStringValue() == string(g) {
					total += field(b, "count").GetIntegerValue()
				}
			}
			if total != sum {
				w.problem("counter %s's %s buckets sum to %d, its total is %d", id, g, total, sum)
			}
		}
		w.checkBuckets(id)
		switch {
		case choicesOf(d) != nil:
			w.checkChoiceRollup(id, d)
			w.checkChoices(id)
		case field(d, "unique").GetBooleanValue():
			w.checkMembers(id)
		case field(d, "distinct").GetBooleanValue():
			w.checkViewers(id, sum)
		default:
			w.checkExact(id, sum)
		}
	}
	for _, o := range w.ops {
		w.checkRefusedAsChanged(o)
		w.checkKeysIn(o)
		w.checkJoinOnly(o)
	}
	w.checkErasures()
	if c := w.creations(noPost); len(c) > 0 {
		w.problem("counter %s was created at %s, for a post that does not exist", noPost, w.rel(c[0].when))
	}
}

// checkNeverCounted: of an id no counter was ever created for, the
// acknowledged increments add up to nothing. Of a kind's counter, a first
// use that changed something creates it, so they cancel out: plain ones'
// deltas sum to 0 (those of unknown outcome may have applied or not), and
// each user's likes or reactions fit one serial order that ends as it
// began, with no membership. An increment acknowledged without its
// counter is lost.
func (w *world) checkNeverCounted(id string) {
	switch {
	case isChoice(id):
		who := map[string]bool{}
		for _, o := range w.increments(id) {
			who[o.user] = true
		}
		for _, u := range slices.Sorted(maps.Keys(who)) {
			w.checkChoicesOf(id, u, 0, commitRec{})
		}
	case w.isUnique(id):
		w.checkMembersOf(id, 0, commitRec{})
	default:
		// A key's attempts are one increment: acknowledged if one was.
		ok, unknown := map[string]*op{}, map[string]*op{}
		for _, o := range w.increments(id) {
			name := fmt.Sprint(o.n)
			if o.key != "" {
				name = o.user + "/" + o.key
			}
			switch {
			case o.ok():
				ok[name] = o
			case o.unknown():
				unknown[name] = o
			}
		}
		var lo, hi int64
		for name, o := range ok {
			lo, hi = lo+o.delta, hi+o.delta
			delete(unknown, name)
		}
		for _, o := range unknown {
			lo, hi = lo+min(0, o.delta), hi+max(0, o.delta)
		}
		if lo > 0 || hi < 0 {
			w.problem("no counter %s was ever created, and its acknowledged increments add up to between %d and %d", id, lo, hi)
		}
	}
}

// checkKeysIn: an end user's first use of a counter whose kind counts the
// app's documents (keys_in), of a document that does not exist, is 404.
func (w *world) checkKeysIn(o *op) {
	if o.counter != noPost || !o.done || o.status >= 500 || w.refusedByErasure(o) {
		return
	}
	if o.status != http.StatusNotFound {
		w.problem("%s: a first read of a post that does not exist answered %d, not 404", o, o.status)
	}
}

// checkViewers: a distinct counter's sketches hold each user whose view
// was acknowledged, and no user who never viewed it: with a few users,
// HyperLogLog's sparse sketch is exact. Only views of its last
// incarnation count; one of unknown outcome may or may not. (An admin's
// view counts the admin, as any user's.)
func (w *world) checkViewers(id string, estimate int64) {
	k := len(w.creations(id))
	var seen, any []string
	for _, o := range w.increments(id) {
		switch {
		case !w.mine(o, k):
		case o.ok():
			seen = append(seen, o.user)
			any = append(any, o.user)
		case o.unknown():
			any = append(any, o.user)
		}
	}
	viewers := w.viewersOf(id, time.Time{})
	if viewers == nil {
		viewers = distinct.New()
	}
	if viewers.AddAll(seen) {
		w.problem("distinct counter %s#%d (estimate %d) lacks a user whose view was acknowledged", id, k, estimate)
	}
	all := distinct.New()
	all.AddAll(any)
	if n := all.Estimate(); all.Merge(viewers) != nil || all.Estimate() != n {
		w.problem("distinct counter %s#%d (estimate %d) holds a user who never viewed it: %d with those who may have, %d without", id, k, estimate, all.Estimate(), n)
	}
}

// checkJoinOnly: an end user's −1 of a counter of a join-only kind is
// never taken: a member does not leave (403; 404 for a counter nobody
// used). The likes checker judges the rest: a join answers as a like.
func (w *world) checkJoinOnly(o *op) {
	if isJoinOnly(o.counter) && o.user != "admin" && o.delta < 0 && o.ok() {
		w.problem("%s: an end user left a counter of a join-only kind", o)
	}
}

// checkRefusedAsChanged: an increment refused because its counter changed
// while it waited (another incarnation of its id: deleted and created
// again) ran while the id was created again: its counter was read at most
// a cache's lifetime before it started, and the flush that refused it ran
// before it ended.
func (w *world) checkRefusedAsChanged(o *op) {
	if o.fn != "incrementCounter" || o.answer.Error == nil || !strings.Contains(o.answer.Error.Message, "changed while this increment waited") {
		return
	}
	from := o.start.Add(-cacheFor)
	again := w.creations(o.counter)
	if len(again) > 0 {
		again = again[1:] // the first creation replaced no other counter
	}
	if !slices.ContainsFunc(again, func(rec commitRec) bool { return !rec.when.Before(from) && !rec.when.After(o.end) }) {
		w.problem("%s was refused as if its counter changed while it waited; its id was not created again then", o)
	}
}

// checkPurged: a counter deleted and purged once no late write could land
// leaves nothing under its id: not even a roll-up slot an event claimed
// while (or after) its tombstone was dropped, which its holder releases
// when it finds the counter gone.
func (w *world) checkPurged(id string) {
	for _, d := range w.model.Documents(root+"counters/"+id+"/", time.Time{}) {
		w.problem("deleted counter %s left %s", id, d.GetName()[len(root):])
	}
}

package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
)

// feedCache is the instances' FEED_CACHE unless a schedule sets its own:
// how much older than its read a getCounters row may be.
const feedCache = time.Second

// feed is a getCounters of a page of counters, by user on instance inst:
// some of the schedule's counters, at times a counter of a kind nobody
// uses and one of no kind, read while likes, deletions and re-creations
// land.
func (w *world) feed(inst int, user string) *op {
	var page []string
	for range 2 + w.rng.IntN(5) {
		page = append(page, w.counters[w.rng.IntN(len(w.counters))])
	}
	if w.rng.IntN(3) == 0 {
		page = append(page, "views:never-used", "no-kind-"+user)
	}
	return w.feedOf(inst, user, page)
}

// feedOf is a getCounters of page by user on instance inst.
func (w *world) feedOf(inst int, user string, page []string) *op {
	o := w.newOp("getCounters", strings.Join(page, ","), inst)
	o.user, o.page = user, page
	body, _ := json.Marshal(map[string]any{"counter_ids": page})
	w.send(o, http.MethodPost, string(body), func() { w.checkFeed(o) })
	return o
}

// checkFeed: each row of a page that answered is exact as of a moment its
// staleness bound allows. Its count and as_of are the counter document's
// at some instant from FEED_CACHE before the request to its answer (or 0,
// of a kind's counter absent then), never a deleted counter's; its
// NOT_FOUND, of a counter absent or deleted at some instant then; the
// reader's membership and choice, exactly their member document's at some
// instant while the request ran.
func (w *world) checkFeed(o *op) {
	if !o.ok() {
		return
	}
	rows := o.answer.Counters
	if len(rows) != len(o.page) {
		w.problem("%s answered %d rows for a page of %d", o, len(rows), len(o.page))
		return
	}
	bound, err := time.ParseDuration(w.settings()["FEED_CACHE"])
	if err != nil {
		w.problem("FEED_CACHE: %v", err)
		return
	}
	from := o.start.Add(-bound)
	for i, row := range rows {
		id := o.page[i]
		docs := w.versions("counters/"+id, from, o.end)
		switch {
		case row.CounterID != id:
			w.problem("%s: row %d is %s, want %s", o, i, row.CounterID, id)
		case row.Error != nil && row.Error.Code == "NOT_FOUND":
			if !anyDoc(docs, func(d *pb.Document) bool { return !isLive(d) }) {
				w.problem("%s: %s answered NOT_FOUND, and it was live from %s to %s", o, id, w.rel(from), w.rel(o.end))
			}
		case row.Error != nil:
			w.problem("%s: %s answered %s", o, id, row.Error.Code)
		case !anyDoc(docs, func(d *pb.Document) bool {
			if d == nil {
				return row.Count == 0 && strings.Contains(id, ":") // of a kind, not used yet
			}
			asOf, _ := time.Parse(time.RFC3339Nano, row.AsOf)
			return isLive(d) && field(d, "count").GetIntegerValue() == row.Count && field(d, "rollup_as_of").GetTimestampValue().AsTime().Equal(asOf)
		}):
			w.problem("%s: %s answered %d as of %s, which its document never held from %s to %s", o, id, row.Count, row.AsOf, w.rel(from), w.rel(o.end))
		case row.Member != nil:
			held := w.versions("counters/"+id+"/members/"+o.user, o.start, o.end)
			if !anyDoc(held, func(d *pb.Document) bool {
				return (d != nil) == *row.Member && (row.Choice == nil || field(d, "choice").GetStringValue() == *row.Choice)
			}) {
				w.problem("%s: %s told %s member %v choice %v, which their member document never said while it ran", o, id, o.user, *row.Member, row.Choice)
			}
		}
	}
}

// versions are the document at path (under the root) as it was at from,
// and as each commit from then to to left it (the instances' clock).
func (w *world) versions(path string, from, to time.Time) []*pb.Document {
	name := root + path
	var out []*pb.Document
	at := w.fs(from)
	for _, d := range w.model.Documents(name, at) {
		if d.GetName() == name {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		out = append(out, nil)
	}
	for _, rec := range w.commits {
		if rec.when.Before(from) || rec.when.After(to) {
			continue
		}
		for _, ch := range rec.changes {
			if ch.Name == name {
				out = append(out, ch.After)
			}
		}
	}
	return out
}

func anyDoc(docs []*pb.Document, ok func(*pb.Document) bool) bool {
	for _, d := range docs {
		if ok(d) {
			return true
		}
	}
	return false
}

// TestAPageReadWhileALikeAndADeleteLand: pages read by a user on one
// instance while their like, then unlike, of a post on the page commits
// on the other, and while an admin deletes another post of it, a page
// each 2 ms from just before each change until well after it lands, no
// page cached: every row is as its documents were at some instant the
// page allows (checkFeed), the reader's heart exactly, and each change
// lands while pages are being read (some page saw the state before it,
// and some the state after). The random schedules meet these races only
// by chance.
func TestAPageReadWhileALikeAndADeleteLand(t *testing.T) {
	page := []string{"p-liked", "p-deleted", "views:never-used"}
	type change struct {
		at     int
		act    func(w *world)
		row    int                 // the page's row it changes
		before func(r ranked) bool // the row as it was
		after  func(r ranked) bool // the row once it landed
	}
	member := func(want bool) func(r ranked) bool {
		return func(r ranked) bool { return r.Error == nil && r.Member != nil && *r.Member == want }
	}
	live := func(r ranked) bool { return r.Error == nil }
	gone := func(r ranked) bool { return r.Error != nil && r.Error.Code == "NOT_FOUND" }
	changes := []change{
		{2000, func(w *world) { w.like("p-liked", 0, "u1", "", 1) }, 0, member(false), member(true)},
		{4000, func(w *world) { w.like("p-liked", 0, "u1", "", -1) }, 0, member(true), member(false)},
		{6000, func(w *world) { w.deleteOn(0, "p-deleted") }, 1, live, gone},
	}
	// ms around each change: it lands within its own call's 5 ms and a few
	// Firestore calls of 5 ms each (its reads, a batch's wait, the commit).
	const from, to = -4, 40
	w := scripted(t, 2, map[string]string{"FEED_CACHE": "0s"}, func(w *world) time.Time {
		w.at(w.ms(0), func() { w.createOn(0, "p-liked", true) })
		w.at(w.ms(0), func() { w.createOn(1, "p-deleted", true) })
		w.at(w.ms(500), func() { w.like("p-deleted", 1, "u1", "", 1) })
		for _, c := range changes {
			w.at(w.ms(c.at), func() { c.act(w) })
			for d := from; d <= to; d += 2 {
				w.at(w.ms(c.at+d), func() { w.feedOf(1, "u1", page) })
			}
		}
		return w.ms(9000)
	})
	for _, c := range changes {
		sawBefore, sawAfter := false, false
		for _, o := range w.ops {
			if o.fn == "getCounters" && o.ok() && len(o.answer.Counters) == len(page) && // else checkFeed said so
				!o.start.Before(w.ms(c.at+from)) && !o.start.After(w.ms(c.at+to)) {
				r := o.answer.Counters[c.row]
				sawBefore = sawBefore || c.before(r)
				sawAfter = sawAfter || c.after(r)
			}
		}
		if !sawBefore || !sawAfter {
			t.Errorf("the change at %d ms to %s: some page saw it before %v, after %v; want both, the change landing among the pages", c.at, page[c.row], sawBefore, sawAfter)
		}
	}
}

package sim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/windows"
)

// The windows: each roll-up adds its change to the minute, hour and day
// buckets of its time, once; rankings read them back.

// checkBuckets: every bucket of a live counter's last incarnation holds
// exactly the changes of the roll-ups whose time (rollup_as_of) falls in
// it, each once (count), and an hour's or a day's, for each slot, the
// largest sum of a run of its last changes from that slot on, in their
// commit order (run_0 … run_5), that peak while it is the counter's
// latest bucket of its granularity and 0 after (peak_0 … peak_5), and
// the bucket before's last peak plus its count (carry_0 … carry_5),
// however often events were delivered; and no other bucket exists. A
// choice counter's roll-ups add each choice's change to that choice's own
// buckets too (granularity hour:love …, with their peaks) and to its
// all-time total.
func (w *world) checkBuckets(id string) {
	created := w.creations(id)
	if len(created) == 0 {
		return
	}
	if isDistinct(id) {
		w.checkEstimates(id)
		return
	}
	from := created[len(created)-1]
	type bucket struct {
		count             int64
		run, carry, peaks [windows.PeakSlots]int64
	}
	want := map[string]bucket{}
	running := map[windows.Granularity]windows.Peak{}
	latest := map[windows.Granularity]string{}
	add := func(g windows.Granularity, start, at time.Time, change int64) {
		docID := windows.DocID(g, start)
		b := want[docID]
		b.count += change
		if slices.Contains(windows.Listed, windows.Granularity(strings.Split(string(g), ":")[0])) {
			p := running[g].Add(w.cal, g, start, at, change)
			running[g], latest[g] = p, docID
			for s := range b.run {
				b.run[s], b.carry[s], b.peaks[s] = p.Values[s], p.Carry(s), p.Open(s)
			}
		}
		want[docID] = b
	}
	name := root + "counters/" + id
	for _, rec := range w.commits {
		if rec.at.Before(from.at) {
			continue
		}
		for _, ch := range rec.changes {
			if ch.Name != name || ch.Before == nil || ch.After == nil ||
				field(ch.After, "rollups").GetIntegerValue() != field(ch.Before, "rollups").GetIntegerValue()+1 {
				continue // not a roll-up's write
			}
			at := field(ch.After, "rollup_as_of").GetTimestampValue().AsTime()
			before, after := countsOf(ch.Before), countsOf(ch.After)
			if change := field(ch.After, "count").GetIntegerValue() - field(ch.Before, "count").GetIntegerValue(); change != 0 || !maps.Equal(before, after) {
				for _, g := range windows.All {
					add(g, w.cal.Start(g, at), at, change) // a switch's by 0: its peaks and carries all the same
				}
			}
			for choice, n := range after {
				if change := n - before[choice]; change != 0 {
					for _, g := range windows.All {
						add(g.Of(choice), w.cal.Start(g, at), at, change)
					}
					add(windows.AllTime.Of(choice), windows.AllTimeStart, at, change)
				}
			}
		}
	}
	granularity := func(docID string) windows.Granularity {
		return windows.Granularity(docID[:strings.LastIndex(docID, "_")])
	}
	for docID, b := range want {
		if g := granularity(docID); latest[g] != "" && docID != latest[g] {
			b.peaks = [windows.PeakSlots]int64{} // closed by the counter's roll-up into a later bucket
			want[docID] = b
		}
	}
	for _, d := range w.under(id, "windows", time.Time{}) {
		docID := d.GetName()[strings.LastIndex(d.GetName(), "/")+1:]
		got := bucket{count: field(d, "count").GetIntegerValue()}
		if _, listed := running[granularity(docID)]; listed {
			for s := range got.peaks {
				got.run[s] = field(d, fmt.Sprint("run_", s)).GetIntegerValue()
				got.carry[s] = field(d, fmt.Sprint("carry_", s)).GetIntegerValue()
				got.peaks[s] = field(d, fmt.Sprint("peak_", s)).GetIntegerValue()
			}
		}
		if got != want[docID] || field(d, "gross") != nil {
			w.problem("counter %s's bucket %s holds %+v (gross %v); its roll-ups' changes make %+v", id, docID, got, field(d, "gross"), want[docID])
		}
		delete(want, docID)
	}
	for docID, b := range want {
		if b != (bucket{}) {
			w.problem("counter %s has no bucket %s, which its roll-ups' changes make %+v", id, docID, b)
		}
	}
}

// rankings asks, once the schedule is quiet, for the ranking of the
// current hour, of the last hour and day (rolling) and of what is rising,
// of every counter, and with kinds of one kind's and one choice's (not
// rising), and checks each against the buckets.
func (w *world) rankings(n int) {
	filters := []rankingFilter{{}}
	if w.cfg.kinds {
		filters = append(filters, rankingFilter{kind: "likes"}, rankingFilter{kind: "reactions", choice: reactionChoices[w.rng.IntN(len(reactionChoices))]})
	}
	for _, f := range filters {
		for _, window := range []string{"hour", windows.LastHour.Name, windows.LastDay.Name} {
			o := w.newOp("topCounters", "", n)
			w.send(o, http.MethodGet, "limit=5&window="+window+f.query(), func() { w.checkRanking(o, window, f) })
		}
		if f.choice == "" {
			o := w.newOp("topCounters", "", n)
			w.send(o, http.MethodGet, "limit=5&window=rising"+f.query(), func() { w.checkRising(o, f) })
		}
	}
	if w.cfg.kinds {
		o := w.newOp("topCounters", "", n)
		w.send(o, http.MethodGet, "limit=5&window=hour&kind=watchers", func() { w.checkEstimatedRanking(o) })
	}
}

// rankingFilter is what a ranking is of: every counter, one kind's (by
// count), or one choice's of a choice kind.
type rankingFilter struct{ kind, choice string }

func (f rankingFilter) query() string {
	q := ""
	if f.kind != "" {
		q += "&kind=" + f.kind
	}
	if f.choice != "" {
		q += "&choice=" + f.choice
	}
	return q
}

// keeps says whether a counter's bucket b is of f's kind.
func (f rankingFilter) keeps(b *pb.Document) bool {
	return f.kind == "" || field(b, "kind").GetStringValue() == f.kind
}

// ranked is one counter of a ranking, as answered.
type ranked struct {
	CounterID string `json:"counter_id"`
	Count     int64  `json:"count"`
	// A rising ranking's too.
	Baseline float64 `json:"baseline_per_hour"`
	Score    float64 `json:"score"`
	// A getCounters row's too.
	AsOf   string  `json:"as_of"`
	Member *bool   `json:"member"`
	Choice *string `json:"choice"`
	Error  *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// checkRanking: a ranking of the current hour is the top of its hour
// buckets; one of a rolling window that says it is exact is the top of
// the window's minutes (hours), of the counters its hour (day) buckets
// rank (no distinct counter: checkEstimatedRanking). One that is not
// exact is counted, and must be a prefix of that top. Of a choice, the
// buckets are the choice's; of a kind, its counters'.
func (w *world) checkRanking(o *op, window string, f rankingFilter) {
	if !o.ok() {
		w.problem("%s failed while everything was quiet", o)
		return
	}
	now := w.instances[o.inst].now() // the instance's clock, which topCounters reads
	r, rolling := map[string]windows.Rolling{windows.LastHour.Name: windows.LastHour, windows.LastDay.Name: windows.LastDay}[window]
	if !rolling { // the current hour: its own buckets, listed and summed
		r = windows.Rolling{Sum: windows.Hour, List: windows.Hour}
	}
	r = r.Of(f.choice)
	from, listed := w.cal.Start(r.Sum, now), []time.Time{w.cal.Start(r.List, now)}
	if rolling {
		from, listed = r.From(now), append(listed, w.cal.Start(r.List, r.From(now)))
	}
	rankedIDs := map[string]bool{}
	for _, id := range w.ids() {
		if rolling && isDistinct(id) {
			continue // a rolling window's users are no sum of buckets: it lists none
		}
		for _, b := range w.under(id, "windows", time.Time{}) {
			start := field(b, "start").GetTimestampValue().AsTime()
			if field(b, "granularity").GetStringValue() == string(r.List) && slices.ContainsFunc(listed, start.Equal) && field(b, "ranked").GetBooleanValue() && f.keeps(b) {
				rankedIDs[id] = true
			}
		}
	}
	want := bruteForceTop(w, r.Sum, from, 5, "count", func(id string) bool { return rankedIDs[id] })
	if rolling && (o.answer.Exact == nil || !*o.answer.Exact) {
		// Not exact: the answer says so, and holds only counters it is
		// sure of, first: none left out while one it outranks is in.
		w.undecided++
		if len(o.answer.Counters) > len(want) || !slices.Equal(o.answer.Counters, want[:len(o.answer.Counters)]) {
			w.problem("%s ranks %v, not exact; its buckets rank %v first", o, o.answer.Counters, want)
		}
		return
	}
	if !slices.Equal(o.answer.Counters, want) {
		w.problem("%s ranks %v; its buckets rank %v", o, o.answer.Counters, want)
	}
}

// ids are every counter a request named.
func (w *world) ids() []string {
	ids := slices.Clone(w.counters)
	for _, o := range w.ops {
		if o.counter != "" && !slices.Contains(ids, o.counter) {
			ids = append(ids, o.counter)
		}
	}
	return ids
}

func (r ranked) String() string { return fmt.Sprintf("%s:%d", r.CounterID, r.Count) }

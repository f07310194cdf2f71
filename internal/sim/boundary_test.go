package sim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/windows"
)

// TestLikesHeldAcrossMidnightHideNoPost: the attack that emptied last_hour
// and last_day for the next hour (day), played by the simulation's real
// handlers and roll-ups, with its clock crossing an hour and a day (01:00
// UTC is midnight in TIME_ZONE Etc/GMT+1): six accounts like 30 junk
// posts at 00:59:40 and unlike them at 01:00:10, around real posts liked
// by five, four, three and two (twice, tied) accounts. Ninety seconds
// later both rankings are exact and equal a brute-force ranking of the
// same buckets, and rising lists the real posts, exactly, as their
// buckets score them. On the version before carries, the junk's peaks of the
// hour (day) before filled its lists to the last depth and both rankings
// answered [] (not exact).
func TestLikesHeldAcrossMidnightHideNoPost(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2000, 1, 1, h, m, s, 0, time.UTC) }
	var tops []*op
	// The last unlike is sent at 01:00:18.95; a cadence (1 s) and its
	// roll-up's event later, the rankings are exact again.
	soon := at(1, 0, 21)
	w := scripted(t, 2, map[string]string{"TIME_ZONE": "Etc/GMT+1"}, func(w *world) time.Time {
		real := map[string]struct {
			likes int
			at    time.Time
		}{"r1": {5, at(0, 30, 0)}, "r2": {3, at(1, 0, 30)}, "r3": {4, at(0, 50, 0)}, "r4": {2, at(0, 45, 0)}, "r5": {2, at(0, 45, 0)}}
		var junk []string
		for i := range 30 {
			junk = append(junk, fmt.Sprintf("j%02d", i))
		}
		w.at(w.ms(0), func() {
			for i, id := range append(slices.Sorted(maps.Keys(real)), junk...) {
				w.createOn(i%2, id, true)
			}
		})
		for id, r := range real {
			for a := range r.likes {
				w.at(r.at.Add(time.Duration(a)*time.Second), func() { w.like(id, a%2, fmt.Sprint("a", a), "", 1) })
			}
		}
		for i, id := range junk {
			for m := range 6 {
				user, spread := fmt.Sprint("m", m), time.Duration(i*6+m)*50*time.Millisecond
				w.at(at(0, 59, 40).Add(spread), func() { w.like(id, m%2, user, "", 1) })
				w.at(at(1, 0, 10).Add(spread), func() { w.like(id, m%2, user, "", -1) })
			}
		}
		read := func() {
			for i, window := range []string{"last_hour", "last_day"} {
				o := w.newOp("topCounters", "", i)
				w.send(o, http.MethodGet, "limit=5&window="+window, func() {})
				tops = append(tops, o)
			}
		}
		w.at(soon, read)
		w.at(at(1, 1, 40), func() {
			read()
			o := w.newOp("topCounters", "", 0)
			w.send(o, http.MethodGet, "limit=5&window=rising", func() {
				w.checkRising(o, rankingFilter{}) // a script's ranking must be exact
				var ids []string
				for _, c := range o.answer.Counters {
					ids = append(ids, c.CounterID)
				}
				if slices.Sort(ids); !slices.Equal(ids, slices.Sorted(maps.Keys(real))) {
					w.problem("%s: want the five real posts, which rose", o)
				}
			})
		})
		return at(1, 3, 0)
	})
	// Soon after the junk is gone, r2 (liked from 01:00:30) has nothing
	// yet.
	for i, now := range []time.Time{soon, at(1, 1, 40)} {
		for j, r := range []windows.Rolling{windows.LastHour, windows.LastDay} {
			o := tops[2*i+j]
			want := bruteForceTop(w, r.Sum, r.From(now), 5, "count", func(id string) bool { return now != soon || id != "r2" })
			if exact := o.answer.Exact != nil && *o.answer.Exact; !o.ok() || !exact || !slices.Equal(o.answer.Counters, want) {
				t.Errorf("%s at %s: %v (exact %v, %s); its buckets rank %v, exactly", r.Name, now.Format(time.TimeOnly), o.answer.Counters, exact, o, want)
			}
		}
	}
}

// bruteForceTop ranks the counters of the schedule that keep keeps by the
// sum of their buckets' field by (count, or a distinct counter's
// estimate) of g from from on: the top limit with a positive
// sum, ties by id.
func bruteForceTop(w *world, g windows.Granularity, from time.Time, limit int, by string, keep func(id string) bool) []ranked {
	var out []ranked
	for _, id := range w.ids() {
		if !keep(id) {
			continue
		}
		var n int64
		for _, b := range w.under(id, "windows", time.Time{}) {
			if field(b, "granularity").GetStringValue() == string(g) && !field(b, "start").GetTimestampValue().AsTime().Before(from) {
				n += field(b, by).GetIntegerValue()
			}
		}
		if n > 0 {
			out = append(out, ranked{CounterID: id, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.CounterID, b.CounterID))
	})
	return out[:min(limit, len(out))]
}

// TestARankingReadPastTheHourSumsTheHourItListed: a last_hour ranking
// asked at 00:59:59.8, whose list read lands at 01:00:02.2, lists hour
// 0's buckets; a, liked twice in hour 0, is liked twice more in minute
// 01:00, and x, in no hour-0 bucket, once. Summed with no end, a counted
// its minute 01:00 and outranked b (3) while x, as much in the window,
// was left out, exact: true. The sums now end with the hour listed: the
// window as of the request.
func TestARankingReadPastTheHourSumsTheHourItListed(t *testing.T) {
	at := func(h, m, s, ms int) time.Time { return time.Date(2000, 1, 1, h, m, s, ms*1e6, time.UTC) }
	var top *op
	scripted(t, 1, nil, func(w *world) time.Time {
		w.at(w.ms(0), func() {
			for _, id := range []string{"a", "b", "x"} {
				w.createOn(0, id, true)
			}
		})
		for u := range 3 {
			if u < 2 {
				w.at(at(0, 30, u, 0), func() { w.like("a", 0, fmt.Sprint("u", u), "", 1) })
			}
			w.at(at(0, 40, u, 0), func() { w.like("b", 0, fmt.Sprint("u", u), "", 1) })
		}
		w.at(at(1, 0, 0, 50), func() { w.like("a", 0, "u2", "", 1) })
		w.at(at(1, 0, 0, 100), func() { w.like("a", 0, "u3", "", 1) })
		w.at(at(1, 0, 0, 150), func() { w.like("x", 0, "u0", "", 1) })
		w.at(at(0, 59, 59, 800), func() {
			top = w.newOp("topCounters", "", 0)
			w.send(top, http.MethodGet, "limit=5&window=last_hour", func() {})
		})
		w.script.latency = func(c *call) time.Duration {
			if top != nil && c.tag == tagOf(top) && c.method == "RunQuery" && c.nth == 1 {
				return 2400 * time.Millisecond // the first list's read, past the hour
			}
			return 5 * time.Millisecond
		}
		return at(1, 1, 0, 0)
	})
	want := []ranked{{CounterID: "b", Count: 3}, {CounterID: "a", Count: 2}}
	if exact := top.answer.Exact != nil && *top.answer.Exact; !top.ok() || !exact || !slices.Equal(top.answer.Counters, want) {
		t.Errorf("last_hour asked at 00:59:59.8: %v (exact %v, %s); want %v, exactly", top.answer.Counters, exact, top, want)
	}
}

package sim

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/windows"
)

// checkRising: a rising ranking that says it is exact lists the top of
// the ranked counters (of its kind) by their score from their buckets
// (windows.RisingNow: the last 60 minutes' minute buckets against the
// baseline hours' buckets before), those scoring above 0, with their last
// 60 minutes' counts. One not exact is counted, and each counter it lists
// has its true count.
func (w *world) checkRising(o *op, f rankingFilter) {
	if !o.ok() {
		w.problem("%s failed while everything was quiet", o)
		return
	}
	now := w.instances[o.inst].now() // the instance's clock, which topCounters reads
	r, current := windows.RisingNow, w.cal.Start(windows.Hour, now)
	from := windows.LastHour.From(now)
	baseFrom, baseTo := r.Baseline(now)
	var all []ranked
	for _, id := range w.ids() {
		var x, base int64
		listed := false
		for _, b := range w.under(id, "windows", time.Time{}) {
			start := field(b, "start").GetTimestampValue().AsTime()
			switch g := windows.Granularity(field(b, "granularity").GetStringValue()); {
			case g == windows.Minute && !start.Before(from):
				x += field(b, "count").GetIntegerValue()
			case g != windows.Hour:
			case !start.Before(baseFrom) && start.Before(baseTo):
				base += field(b, "count").GetIntegerValue()
				fallthrough
			default:
				listed = listed || (start.Equal(current) || start.Equal(current.Add(-time.Hour))) && field(b, "ranked").GetBooleanValue() && f.keeps(b)
			}
		}
		if listed {
			all = append(all, ranked{CounterID: id, Count: x, Baseline: max(float64(base), 0) / float64(r.BaselineHours), Score: r.Score(x, base)})
		}
	}
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.CounterID, b.CounterID))
	})
	var want []ranked
	truth := map[string]ranked{}
	for _, s := range all {
		truth[s.CounterID] = s
		if s.Score > 0 && len(want) < 5 {
			want = append(want, s)
		}
	}
	got := o.answer.Counters
	if o.answer.Exact == nil || !*o.answer.Exact {
		// Not exact: the best of those it scored, each as its buckets
		// score it, rising, highest first.
		w.undecided++
		for i, c := range got {
			if c != truth[c.CounterID] || c.Score <= 0 || i > 0 && c.Score > got[i-1].Score || i >= 5 {
				w.problem("%s lists %v, not exact; its buckets score %s %+v", o, got, c.CounterID, truth[c.CounterID])
			}
		}
		return
	}
	if !slices.Equal(got, want) {
		w.problem("%s rises %v; its buckets score %v first", o, got, want)
	}
}

func TestRisingWeighsTheHoursBefore(t *testing.T) {
	// A steady counter, 30 an hour for three hours, and one that jumps
	// from nothing to 60 an hour: in the fourth hour the jump scores
	// above the steady one, whose baseline (its hours before) weighs
	// against it, as the buckets say (checkRising; a script's ranking
	// must be exact).
	scripted(t, 2, nil, func(w *world) time.Time {
		w.endAt = w.epoch.Add(5 * time.Hour)
		w.at(w.ms(0), func() { w.createOn(0, "steady", false) })
		w.at(w.ms(0), func() { w.createOn(1, "jump", false) })
		for m := 1; m < 200; m += 2 {
			w.at(w.epoch.Add(time.Duration(m)*time.Minute), func() { w.add("steady", m%2, 1, "") })
		}
		for m := 150; m < 200; m++ {
			w.at(w.epoch.Add(time.Duration(m)*time.Minute), func() { w.add("jump", m%2, 1, "") })
		}
		end := w.epoch.Add(201 * time.Minute)
		w.at(end, func() {
			o := w.newOp("topCounters", "", 0)
			w.send(o, http.MethodGet, "limit=5&window=rising", func() {
				w.checkRising(o, rankingFilter{})
				if len(o.answer.Counters) != 2 || o.answer.Counters[0].CounterID != "jump" || o.answer.Counters[1].Baseline == 0 {
					w.problem("%s: want jump first, and steady with a baseline", o)
				}
			})
		})
		return end.Add(time.Second)
	})
}

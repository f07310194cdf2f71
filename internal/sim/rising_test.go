package sim

import (
	"cmp"
	"slices"
	"strings"
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
	type scored struct {
		ranked
		score float64
	}
	var all []scored
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
			all = append(all, scored{ranked{CounterID: id, Count: x}, r.Score(x, base)})
		}
	}
	var want []ranked
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.CounterID, b.CounterID))
	})
	counts := map[string]int64{}
	for _, s := range all {
		counts[s.CounterID] = s.Count
		if s.score > 0 && len(want) < 5 {
			want = append(want, s.ranked)
		}
	}
	got := make([]ranked, len(o.answer.Counters))
	for i, c := range o.answer.Counters {
		got[i] = ranked{CounterID: c.CounterID, Count: c.Count}
	}
	if o.answer.Exact == nil || !*o.answer.Exact {
		w.undecided++
		for _, c := range got {
			if n, ok := counts[c.CounterID]; !ok || n != c.Count {
				w.problem("%s lists %v, not exact; %s counts %d in its last 60 minutes", o, got, c.CounterID, n)
			}
		}
		return
	}
	if !slices.Equal(got, want) {
		w.problem("%s rises %v; its buckets score %v first", o, got, want)
	}
}

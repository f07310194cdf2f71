package sim

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/windows"
)

// A distinct kind's hours and days: the roll-up sets each bucket to the
// estimate of its sketches, and rankings of an hour or a day order by it.

// checkEstimates: a distinct counter's buckets are its hours and days
// that hold sketches, each holding the estimate of its shards' sketches
// merged, as the roll-ups after its last views set it (a change of an
// estimate counts nobody in a window, so none adds to it).
func (w *world) checkEstimates(id string) {
	sketches := map[string][]*pb.Document{}
	for _, d := range w.under(id, "sketches", time.Time{}) {
		g, start := windows.Granularity(field(d, "granularity").GetStringValue()), field(d, "start").GetTimestampValue().AsTime()
		sketches[windows.DocID(g, start)] = append(sketches[windows.DocID(g, start)], d)
	}
	buckets := map[string]int64{}
	for _, b := range w.under(id, "windows", time.Time{}) {
		buckets[path.Base(b.GetName())] = field(b, "estimate").GetIntegerValue()
		if field(b, "count") != nil || field(b, "peak_0") != nil {
			w.problem("distinct counter %s's bucket %s has a count or peaks, which rolling windows would sum", id, path.Base(b.GetName()))
		}
	}
	for _, bucket := range slices.Sorted(maps.Keys(sketches)) {
		want := w.merged(id, sketches[bucket]).Estimate()
		if got, ok := buckets[bucket]; !ok || got != want {
			w.problem("distinct counter %s's bucket %s holds %d (%v), its sketches estimate %d", id, bucket, got, ok, want)
		}
	}
	for _, bucket := range slices.Sorted(maps.Keys(buckets)) {
		if sketches[bucket] == nil {
			w.problem("distinct counter %s has a bucket %s with no sketches", id, bucket)
		}
	}
}

// checkEstimatedRanking: a distinct kind's ranking of the current hour is
// the top of its counters' hour buckets by estimate.
func (w *world) checkEstimatedRanking(o *op) {
	if !o.ok() {
		w.problem("%s failed while everything was quiet", o)
		return
	}
	want := bruteForceTop(w, windows.Hour, w.cal.Start(windows.Hour, w.instances[o.inst].now()), 5, "estimate", isDistinct)
	if !slices.Equal(o.answer.Counters, want) {
		w.problem("%s ranks %v; its buckets rank %v", o, o.answer.Counters, want)
	}
}

// TestAViewAtTheEndOfAQuietHourIsRanked: a counter viewed at 00:00:57,
// then not for an hour, then in the last moments of the next: its
// roll-up, due just after the hour turned, reads in the hour after, and
// sets the hour it skipped too, so the hour before ranks the view
// (checkEstimates). A roll-up that set only the bucket of the roll-up
// before and its own left that hour empty for good.
func TestAViewAtTheEndOfAQuietHourIsRanked(t *testing.T) {
	w := scripted(t, 1, nil, func(w *world) time.Time {
		edge := w.epoch.Truncate(time.Hour).Add(2 * time.Hour)
		w.at(w.ms(1000), func() { w.read("watchers:p1", 0, "u0", "") })
		w.at(edge.Add(-300*time.Millisecond), func() { w.read("watchers:p1", 0, "u1", "") })
		return edge.Add(30 * time.Minute)
	})
	got := w.estimates("watchers:p1")
	hour := w.epoch.Truncate(time.Hour)
	want := map[string]int64{windows.DocID(windows.Hour, hour): 1, windows.DocID(windows.Hour, hour.Add(time.Hour)): 1, windows.DocID(windows.Day, hour): 2}
	if !maps.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

// TestAViewCommittedAfterTheNextHoursRollUpIsRanked: a view stamped in the
// last moments of an hour whose commit lands after a roll-up of the next
// hour read (another viewer's), and whose event comes 30 s late. Its
// roll-up reaches back FIRESTORE_DEADLINE + 1 s before the roll-up
// before, so it sets the hour the view was stamped in. From the roll-up
// before's read time itself, it set only the new hour.
func TestAViewCommittedAfterTheNextHoursRollUpIsRanked(t *testing.T) {
	w := scripted(t, 2, nil, func(w *world) time.Time {
		edge := w.epoch.Truncate(time.Hour).Add(time.Hour)
		during := func(from, to time.Duration) bool {
			return !time.Now().Before(edge.Add(from)) && time.Now().Before(edge.Add(to))
		}
		w.script.latency = func(c *call) time.Duration {
			if c.inst == 0 && c.method == "Commit" && during(-100*time.Millisecond, 0) {
				return 2500 * time.Millisecond // u1's view: stamped before the hour, in after its next roll-up
			}
			return 5 * time.Millisecond
		}
		w.script.delay = func(string) time.Duration {
			if during(2*time.Second, 3*time.Second) {
				return 30 * time.Second // its event
			}
			return 5 * time.Millisecond
		}
		w.at(w.ms(1000), func() { w.read("watchers:p1", 0, "u0", "") })
		w.at(edge.Add(-100*time.Millisecond), func() { w.read("watchers:p1", 0, "u1", "") })
		w.at(edge.Add(500*time.Millisecond), func() { w.read("watchers:p1", 1, "u2", "") })
		return edge.Add(10 * time.Minute)
	})
	hour := w.epoch.Truncate(time.Hour)
	got := w.estimates("watchers:p1")
	if want := map[string]int64{windows.DocID(windows.Hour, hour): 2, windows.DocID(windows.Hour, hour.Add(time.Hour)): 1, windows.DocID(windows.Day, hour): 3}; !maps.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

// TestAViewStampedByAClockAheadIsRanked: an instance whose clock runs
// 1.5 s ahead (past a cadence, within FIRESTORE_DEADLINE + 1 s) stamps a
// view 1.2 s before the hour turns into the next hour's sketch; its
// roll-up reads before the hour turns, and nothing rolls the counter up
// again. The roll-up reaches FIRESTORE_DEADLINE + 1 s past its read
// time, so it sets the next hour too; reaching only to its read time, it
// left that bucket without an estimate for good (checkEstimates).
func TestAViewStampedByAClockAheadIsRanked(t *testing.T) {
	w := scripted(t, 1, nil, func(w *world) time.Time {
		w.instances[0].ahead = 1500 * time.Millisecond
		edge := w.epoch.Truncate(time.Hour).Add(time.Hour)
		w.at(w.ms(1000), func() { w.read("watchers:p1", 0, "u0", "") })
		w.at(edge.Add(-1200*time.Millisecond), func() { w.read("watchers:p1", 0, "u1", "") })
		return edge.Add(10 * time.Minute)
	})
	hour := w.epoch.Truncate(time.Hour)
	got := w.estimates("watchers:p1")
	if want := map[string]int64{windows.DocID(windows.Hour, hour): 1, windows.DocID(windows.Hour, hour.Add(time.Hour)): 1, windows.DocID(windows.Day, hour): 2}; !maps.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

// TestAViewerBackInANewHourWhoseEventIsLostIsRanked: a viewer of an hour
// back in the next one changes that hour's sketch, not the counter's sum,
// and the write's event is lost. The counter's sums say a shard was
// written after its roll-up's read time, so reconcile rolls it up and the
// new hour ranks the viewer; rolling up only a counter whose estimate
// changed left that hour without one for good.
func TestAViewerBackInANewHourWhoseEventIsLostIsRanked(t *testing.T) {
	w := scripted(t, 1, nil, func(w *world) time.Time {
		edge := w.epoch.Truncate(time.Hour).Add(time.Hour)
		lose := false
		w.script.lose = func(name string) bool { return lose && strings.HasPrefix(name, "counters/watchers:p1/shards/") }
		w.at(w.ms(1000), func() { w.read("watchers:p1", 0, "u0", "") })
		w.at(edge.Add(time.Second), func() {
			lose = true // the event of the view back
			w.read("watchers:p1", 0, "u0", "")
		})
		w.at(edge.Add(5*time.Second), func() { lose = false })
		return edge.Add(30 * time.Minute)
	})
	hour := w.epoch.Truncate(time.Hour)
	got := w.estimates("watchers:p1")
	if want := map[string]int64{windows.DocID(windows.Hour, hour): 1, windows.DocID(windows.Hour, hour.Add(time.Hour)): 1, windows.DocID(windows.Day, hour): 1}; !maps.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

// estimates are counter id's buckets' estimates, by bucket id.
func (w *world) estimates(id string) map[string]int64 {
	out := map[string]int64{}
	for _, b := range w.under(id, "windows", time.Time{}) {
		out[path.Base(b.GetName())] = field(b, "estimate").GetIntegerValue()
	}
	return out
}

package sim

import (
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// Scripted schedules where a commit applies and its answer is lost: the
// write is in, the caller hears it failed (script.faultAfter).

func TestAFirstLikeWhoseAnswerIsLostCountsOnce(t *testing.T) {
	// u0's keyed like is the first use of likes:p1: one commit creates
	// the counter, the member document and the key's record, and its
	// answer is lost. The request answers 503; its retry with the same
	// key replays the first answer, and the post has one like.
	var first *op
	w := scripted(t, 2, nil, func(w *world) time.Time {
		w.script.faultAfter = func(c *call) codes.Code {
			if c.method == "Commit" && time.Now().Before(w.ms(150)) {
				return codes.Unavailable
			}
			return codes.OK
		}
		w.at(w.ms(100), func() { first = w.like("likes:p1", 0, "u0", "k1", 1) })
		return w.ms(5000)
	})
	retry := w.lastOf("incrementCounter")
	switch {
	case first.status != http.StatusServiceUnavailable:
		t.Errorf("the like whose answer was lost: %s, want 503", first)
	case retry == first || !retry.ok() || !retry.answer.Replayed || retry.answer.Member == nil || !*retry.answer.Member:
		t.Errorf("its retry: %s, want its first answer replayed (member)", retry)
	case len(w.creations("likes:p1")) != 1 || w.shardSum("likes:p1", time.Time{}) != 1:
		t.Errorf("%d creations, %d likes; want 1 and 1", len(w.creations("likes:p1")), w.shardSum("likes:p1", time.Time{}))
	}
}

func TestAnErasureWhoseRecordAnswerIsLostBeginsAgain(t *testing.T) {
	// The erasure's record is in, its answer lost: eraseMember answers
	// 503, and the backend's next call, without a page token, begins the
	// erasure again (a later record). Every instance refuses u0's old
	// token from the first record on, and the erasure completes with u0
	// in no counter.
	w := scripted(t, 2, nil, func(w *world) time.Time {
		recorded := false
		w.script.faultAfter = func(c *call) codes.Code {
			if !recorded && len(w.erasures) > 0 && c.tag == tagOf(w.erasures[0].calls[0]) && c.method == "Commit" { // its record
				recorded = true
				return codes.DeadlineExceeded
			}
			return codes.OK
		}
		w.at(w.ms(0), func() { w.createOn(0, "c", true) })
		w.at(w.ms(100), func() { w.like("c", 1, "u0", "", 1) })
		w.at(w.ms(200), func() { w.erase("u0") })
		w.at(w.ms(2500), func() { w.like("c", 1, "u0", "", 1) }) // the old token: refused
		return w.ms(30_000)
	})
	e := w.erasures[0]
	if e.calls[0].status < 500 || e.complete == nil || w.shardSum("c", time.Time{}) != 0 {
		t.Errorf("first call %s; complete %v; c counts %d: want a 5xx, then complete, and 0", e.calls[0], e.complete, w.shardSum("c", time.Time{}))
	}
	if o := w.lastOf("incrementCounter"); o.status != http.StatusUnauthorized {
		t.Errorf("u0's old token after the lost record: %s, want 401", o)
	}
}

func TestViewersThroughTwoInstancesAtOnceAreAllCounted(t *testing.T) {
	// Twelve users view a distinct counter at once, through two
	// instances, each commit slow: each instance's commit reads a shard's
	// sketch and adds its viewer while the other's does the same. A
	// sketch written without the version it read undid the other's add.
	w := scripted(t, 2, map[string]string{"COUNTER_KINDS": kinds}, func(w *world) time.Time {
		w.script.latency = func(c *call) time.Duration {
			if c.method == "Commit" {
				return 30 * time.Millisecond
			}
			return 5 * time.Millisecond
		}
		w.at(w.ms(0), func() { w.read("watchers:p1", 0, "u0", "") }) // its first use
		for i, u := range reactors {
			w.at(w.ms(500+i), func() { w.read("watchers:p1", i%2, u, "") })
		}
		return w.ms(5000)
	})
	if n := w.shardSum("watchers:p1", time.Time{}); n != int64(len(reactors)+1) {
		t.Errorf("%d viewers counted, want %d", n, len(reactors)+1)
	}
}

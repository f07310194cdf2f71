package sim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The users of a choice counter (a post's reactions): each reacts from
// two devices at once, each device tapping one reaction after another,
// switching, removing theirs, retrying a tap with its key after a 503,
// sending a key again with the same reaction (a replay) or, by mistake,
// another (409), and reading the counter (their own choice with it).

// reactionChoices are the choices of the kind reactions (kinds).
var reactionChoices = []string{"like", "love", "haha", "wow"}

// reactors are the users of choice counters.
var reactors = func() []string {
	var out []string
	for i := range 12 {
		out = append(out, fmt.Sprint("r", i))
	}
	return out
}()

// isChoice says whether counter id is of the choice kind reactions.
func isChoice(id string) bool { return strings.HasPrefix(id, "reactions:") }

// randomChoice is a tap's choice: one of the kind's, or now and then ""
// (removing the user's).
func randomChoice(r *rand.Rand) string {
	if r.IntN(5) == 0 {
		return ""
	}
	return reactionChoices[r.IntN(len(reactionChoices))]
}

// choiceDelta is the delta an op of choice stands for: +1 sets it, −1
// ("") removes the user's.
func choiceDelta(choice string) int64 {
	if choice == "" {
		return -1
	}
	return 1
}

// reactions plans choice counter id's users: each has two devices, and
// each device taps a few times, the next tap a moment after the last one
// answered, while the other device taps too.
func (w *world) reactions(id string) {
	for _, u := range reactors {
		for range 2 {
			taps := w.rng.IntN(4)
			if taps == 0 {
				continue
			}
			t := w.epoch.Add(10*time.Millisecond + time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
			w.at(t, func() { w.device(id, u, taps) })
		}
	}
}

// device is one of user u's devices: its next tap (or, at times, a strong
// read), then, once answered, the others, left in all.
func (w *world) device(id, u string, left int) {
	next := func() {
		if left > 1 && w.noisy() {
			think := time.Duration(w.rng.IntN(400)) * time.Millisecond
			w.at(time.Now().Add(think), func() { w.device(id, u, left-1) })
		}
	}
	if w.rng.IntN(6) == 0 {
		w.strongAs(w.pick(), id, u, next)
		return
	}
	w.tap(id, w.pick(), u, next)
}

// tap is user u's reaction on choice counter id: a choice, or a removal
// (its "" or, at times, a −1 without a choice); half the time with a key,
// at times with a key the user sent before, with its choice (a replay) or
// this tap's (409 if it differs). next runs once it answered.
func (w *world) tap(id string, inst int, u string, next func()) *op {
	o := w.newOp("incrementCounter", id, inst)
	o.user, o.react, o.choice = u, true, randomChoice(w.rng)
	o.byDelta = o.choice == "" && w.rng.IntN(2) == 0
	if w.rng.IntN(2) == 0 {
		o.key = fmt.Sprintf("t%d", w.rng.IntN(1_000_000))
	}
	if used := w.taps[id+"/"+u]; len(used) > 0 && w.rng.IntN(5) == 0 {
		again := used[w.rng.IntN(len(used))]
		o.key = again.key
		if w.rng.IntN(2) == 0 {
			o.choice, o.byDelta = again.choice, again.byDelta
		}
	}
	o.delta = choiceDelta(o.choice)
	if o.key != "" {
		w.taps[id+"/"+u] = append(w.taps[id+"/"+u], o)
	}
	w.sendTap(o, next)
	return o
}

// sendTap sends choice op o (again, retried after a 503 with its key);
// next runs once it answered.
func (w *world) sendTap(o *op, next func()) {
	body := fmt.Sprintf(`{"counter_id":%q,"choice":%q}`, o.counter, o.choice)
	if o.byDelta {
		body = fmt.Sprintf(`{"counter_id":%q,"delta":-1}`, o.counter)
	}
	w.send(o, http.MethodPost, body, func() {
		w.retry(o)
		if next != nil {
			next()
		}
	})
}

// strongAs is user u's strong read of counter id on instance n, which
// answers their choice too; next runs once it answered.
func (w *world) strongAs(n int, id, u string, next func()) *op {
	o := w.newOp("getCounter", id, n)
	o.user = u
	w.send(o, http.MethodGet, "consistency=strong&counter_id="+url.QueryEscape(id), func() {
		w.checkStrong(o)
		next()
	})
	return o
}

package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
)

// The operations: each is a request to an instance's real handler, as a
// client sends it, or an event as Eventarc delivers it; what it answered
// is kept for the invariants.

// users are the uids of likes.
var users = []string{"u0", "u1", "u2", "u3", "u4", "u5"}

// op is one request of the schedule and its answer.
type op struct {
	n          int
	fn         string // the function called
	counter    string
	inst       int
	user       string // the caller's uid ("admin" for an admin)
	key        string // idempotency key
	delta      int64
	value      int64 // a reset's target
	attempt    int
	first      *op // the first attempt, of a retry
	unique     bool
	start, end time.Time
	// inc and live are the counter's incarnation (creations so far) and
	// whether it was live at the request's start; absent is true when no
	// document was there at all (a kind's counter may be created by it).
	inc          int
	live, absent bool
	done         bool
	status       int
	answer       answer
	items        []*op // a batch's items
	batch        *op   // an item's batch
	// react is a choice counter's op: it sets choice ("" removes the
	// user's, sent as a −1 without a choice when byDelta).
	react   bool
	choice  string
	byDelta bool
	// page is a getCounters' counters, in order.
	page []string
	// issued is when the caller's ID token was issued (an end user's).
	issued time.Time
	kept   time.Time // the token's issue time o's device kept (zero: the user's latest)
	raw    []byte    // the answer's body
	// upload is how long the client takes to send the request's body
	// (a slow network): the function reads it after admitting the caller.
	upload time.Duration
}

// answer is what a function answered, the fields the invariants read.
type answer struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Count    int64    `json:"count"`
	AsOf     string   `json:"as_of"`
	Delta    int64    `json:"delta"`
	Member   *bool    `json:"member"`
	Changed  *bool    `json:"changed"`
	Replayed bool     `json:"replayed"`
	Exact    *bool    `json:"exact"`
	Counters []ranked `json:"counters"`
	// A choice counter's: the caller's choice after and before an
	// increment (and as a read saw it), and a read's counts by choice.
	Choice   *string          `json:"choice"`
	Previous *string          `json:"previous"`
	Counts   map[string]int64 `json:"counts"`
	Results  []struct {
		Status int `json:"status"`
		answer
	} `json:"results"`
}

func (o *op) String() string {
	if o.react {
		return fmt.Sprintf("op %d %s %s#%d on %d (user %q key %q choice %q attempt %d) -> %d", o.n, o.fn, o.counter, o.inc, o.inst, o.user, o.key, o.choice, o.attempt, o.status)
	}
	return fmt.Sprintf("op %d %s %s#%d on %d (user %q key %q delta %d attempt %d) -> %d", o.n, o.fn, o.counter, o.inc, o.inst, o.user, o.key, o.delta, o.attempt, o.status)
}

func (o *op) asOf() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, o.answer.AsOf)
	return t
}

// ok is a 200 or 201.
func (o *op) ok() bool {
	return o.done && (o.status == http.StatusOK || o.status == http.StatusCreated)
}

// unknown says whether the op may have been applied though it was not
// acknowledged: it ended in a 5xx, or never ended.
func (o *op) unknown() bool { return !o.done || o.status >= 500 }

func (w *world) newOp(fn, id string, inst int) *op {
	o := &op{n: len(w.ops), fn: fn, counter: id, inst: inst, user: "admin"}
	o.inc, o.live, o.absent = w.state(id, time.Now())
	w.ops = append(w.ops, o)
	return o
}

// send makes o's request to its instance, with body (a query string for
// a GET), and runs done in the driver once answered.
func (w *world) send(o *op, method, body string, done func()) {
	o.start = time.Now()
	target := "/" + o.fn
	var rd *strings.Reader
	if method == http.MethodGet {
		target += "?" + body
		rd = strings.NewReader("")
	} else {
		rd = strings.NewReader(body)
	}
	tag := tagged(context.Background(), fmt.Sprintf("op%06d", o.n))
	ctx, cancel := context.WithCancel(tag)
	if o.fn == "incrementCounter" {
		// The client's own deadline, a millisecond short of the
		// function's (FIRESTORE_DEADLINE): an increment's flush, begun at
		// the instant its request did, has the function's deadline too,
		// and a request and its flush ending at one instant would leave
		// which of them answers to the group commit's select, at random
		// (a seed would not replay).
		cancel()
		ctx, cancel = context.WithDeadline(tag, time.Now().Add(deadline-time.Millisecond))
	}
	var in io.Reader = rd
	if o.upload > 0 {
		in = &slowBody{r: rd, wait: o.upload}
	}
	req := httptest.NewRequestWithContext(ctx, method, target, in)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if o.fn != "reconcileCounters" && o.fn != "rollupCounter" {
		token, issued := w.token(o)
		req.Header.Set("Authorization", "Bearer "+token)
		o.issued = issued
		for _, it := range o.items {
			it.issued = issued
		}
	}
	if o.key != "" && o.batch == nil && o.items == nil {
		req.Header.Set("Idempotency-Key", o.key)
	}
	rec := httptest.NewRecorder()
	// Each request starts in a step of its own, even with others at the
	// same instant: it runs until it waits before the next starts, so which
	// of two requests queues first in a group commit is the seed's.
	w.at(time.Now(), func() {
		w.tracef("  %s sent", o)
		handler := w.handler(o.inst, o.fn)
		f := w.instances[o.inst].fly(func() { w.answered(o, lostAnswer(), cancel, done) }) // the connection dropped with the instance
		w.d.spawn(func() { handler.ServeHTTP(rec, req) }, func() {
			if f.land() {
				w.answered(o, rec, cancel, done)
			}
		})
	})
	if w.noisy() && w.rng.Float64() < w.cfg.pCancel {
		// The client gives up (its connection drops): the handler's
		// context ends; what it sent to Firestore may still apply.
		w.at(time.Now().Add(time.Duration(w.rng.IntN(2000))*time.Millisecond), cancel)
	}
}

// lostAnswer is what a client hears of a request whose instance crashed
// under it: no answer, a 503 (so a client with a key retries).
func lostAnswer() *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusServiceUnavailable)
	rec.WriteString(`{"error":{"code":"UNAVAILABLE","message":"no answer: the instance crashed"}}`)
	return rec
}

// pageTokens are left out of the trace: an erasure's are signed with a
// key drawn from crypto/rand, which no seed replays.
var pageTokens = regexp.MustCompile(`"next_page_token":"[^"]*"`)

// slowBody is a request body that arrives after wait.
type slowBody struct {
	r    io.Reader
	wait time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.wait > 0 {
		time.Sleep(b.wait)
		b.wait = 0
	}
	return b.r.Read(p)
}

// answered records o's answer, and runs what follows it.
func (w *world) answered(o *op, rec *httptest.ResponseRecorder, cancel func(), done func()) {
	cancel()
	o.done, o.end, o.status, o.raw = true, time.Now(), rec.Code, rec.Body.Bytes()
	json.Unmarshal(o.raw, &o.answer)
	w.signInAgain(o)
	w.tracef("  %s: %s", o, pageTokens.ReplaceAllString(strings.TrimSpace(rec.Body.String()), `"next_page_token":"…"`))
	if done != nil {
		done()
	}
}

func (w *world) pick() int { return w.rng.IntN(len(w.instances)) }

func (w *world) create(id string, unique bool) { w.createOn(w.pick(), id, unique) }

func (w *world) createOn(n int, id string, unique bool) *op {
	o := w.newOp("createCounter", id, n)
	body := fmt.Sprintf(`{"counter_id":%q,"num_shards":%d,"unique":%v}`, id, 1+w.rng.IntN(4), unique)
	if strings.Contains(id, ":") {
		body = fmt.Sprintf(`{"counter_id":%q}`, id) // of a kind: its settings
	}
	w.send(o, http.MethodPost, body, func() { w.checkCreate(o) })
	return o
}

// isUnique says whether counter id counts users: its document now, or
// its kind's.
func (w *world) isUnique(id string) bool {
	if d := w.counterDoc(id, time.Time{}); d != nil {
		return field(d, "unique").GetBooleanValue()
	}
	return strings.HasPrefix(id, "likes:") || isJoinOnly(id)
}

// isJoinOnly says whether counter id is of the join-only kind follows.
func isJoinOnly(id string) bool { return strings.HasPrefix(id, "follows:") }

// isDistinct says whether counter id is of the distinct kind watchers.
func isDistinct(id string) bool { return strings.HasPrefix(id, "watchers:") }

// watched is the schedule's counter of the distinct kind watchers.
func (w *world) watched() string {
	for _, id := range w.counters {
		if isDistinct(id) {
			return id
		}
	}
	panic("no counter of the kind watchers")
}

// increment is an increment request: a like or an unlike of a random
// user on a unique counter, a random delta of an admin on a plain one;
// with a key half the time, retried with it after a 503, as clients do.
func (w *world) increment(id string, inst int) {
	if isChoice(id) {
		w.tap(id, inst, reactors[w.rng.IntN(len(reactors))], nil)
		return
	}
	key := ""
	if w.rng.IntN(2) == 0 {
		key = fmt.Sprintf("k%d", w.rng.IntN(1_000_000))
	}
	switch {
	case w.isUnique(id):
		w.like(id, inst, users[w.rng.IntN(len(users))], key, int64(1-2*w.rng.IntN(2)))
		return
	case strings.HasPrefix(id, "reads:"), isDistinct(id):
		w.read(id, inst, users[w.rng.IntN(len(users))], key)
		return
	}
	delta := int64(1 + w.rng.IntN(5))
	if w.rng.IntN(3) == 0 {
		delta = -delta
	}
	if w.cfg.nearBound && w.rng.IntN(2) == 0 {
		delta = counter.MaxDelta
	}
	if used := w.keys[id]; len(used) > 0 && w.rng.IntN(4) == 0 {
		// A client that sends a key again: the same increment (a replay),
		// or, by mistake, another delta (409 while its record lives).
		again := used[w.rng.IntN(len(used))]
		key = again.key
		if w.rng.IntN(2) == 0 {
			delta = again.delta
		}
	}
	o := w.add(id, inst, delta, key)
	if key != "" {
		w.keys[id] = append(w.keys[id], o)
	}
}

// noPost is a counter of the kind reads whose post does not exist: end
// users' first reads of it are refused (keys_in), and nobody else
// touches it.
const noPost = "reads:p2"

// read is an end user's +1 of reads counter id (keys_in posts), or their
// view of a distinct one.
func (w *world) read(id string, inst int, user, key string) *op {
	o := w.newOp("incrementCounter", id, inst)
	o.user, o.key, o.delta = user, key, 1
	w.sendIncrement(o)
	return o
}

// like is user's +1 (like) or −1 (unlike) of unique counter id.
func (w *world) like(id string, inst int, user, key string, delta int64) *op {
	o := w.newOp("incrementCounter", id, inst)
	o.user, o.key, o.delta, o.unique = user, key, delta, true
	w.sendIncrement(o)
	return o
}

// add is an admin's increment of delta on plain counter id.
func (w *world) add(id string, inst int, delta int64, key string) *op {
	o := w.newOp("incrementCounter", id, inst)
	o.key, o.delta = key, delta
	w.sendIncrement(o)
	return o
}

func (w *world) sendIncrement(o *op) {
	if o.react {
		w.sendTap(o, nil)
		return
	}
	w.send(o, http.MethodPost, fmt.Sprintf(`{"counter_id":%q,"delta":%d}`, o.counter, o.delta), func() { w.retry(o) })
}

// retry sends a keyed increment that answered 503 again, with its key, as
// clients do.
func (w *world) retry(o *op) {
	if o.key == "" || o.status != http.StatusServiceUnavailable || o.attempt >= 3 {
		return
	}
	w.at(time.Now().Add(time.Duration(100+w.rng.IntN(400))*time.Millisecond), func() {
		r := w.newOp("incrementCounter", o.counter, w.pick())
		r.user, r.key, r.delta, r.unique, r.attempt, r.first = o.user, o.key, o.delta, o.unique, o.attempt+1, o.first
		r.react, r.choice, r.byDelta, r.kept = o.react, o.choice, o.byDelta, o.kept
		if r.first == nil {
			r.first = o
		}
		w.sendIncrement(r)
	})
}

// batch is a request of several increments of several counters, by an
// admin (plain ones) or a user (likes).
func (w *world) batch() {
	b := w.newOp("incrementCounter", "", w.pick())
	if w.rng.IntN(2) == 0 {
		b.user = users[w.rng.IntN(len(users))]
	}
	var items []string
	for range 2 + w.rng.IntN(6) {
		id := w.counters[w.rng.IntN(len(w.counters))]
		if b.user == "admin" && strings.HasPrefix(id, "reads:") {
			continue // an admin's first use of a post that does not exist would create it
		}
		it := w.newOp("incrementCounter", id, b.inst)
		it.user, it.batch, it.unique = b.user, b, w.isUnique(id)
		it.delta = int64(1 + w.rng.IntN(5))
		switch {
		case it.unique:
			it.delta = int64(1 - 2*w.rng.IntN(2))
		case b.user != "admin":
			it.delta = 1 // an end user's views
		}
		if w.rng.IntN(2) == 0 {
			it.key = fmt.Sprintf("k%d", w.rng.IntN(1_000_000))
		}
		b.items = append(b.items, it)
		item := fmt.Sprintf(`{"counter_id":%q,"delta":%d`, id, it.delta)
		if isChoice(id) {
			it.react, it.unique, it.choice = true, false, randomChoice(w.rng)
			it.delta = choiceDelta(it.choice)
			item = fmt.Sprintf(`{"counter_id":%q,"choice":%q`, id, it.choice)
		}
		if it.key != "" {
			item += fmt.Sprintf(`,"idempotency_key":%q`, it.key)
		}
		items = append(items, item+"}")
	}
	w.send(b, http.MethodPost, `{"increments":[`+strings.Join(items, ",")+`]}`, func() {
		for i, it := range b.items {
			it.done, it.start, it.end, it.status = true, b.start, b.end, b.status
			if b.status == http.StatusOK && i < len(b.answer.Results) {
				it.status, it.answer = b.answer.Results[i].Status, b.answer.Results[i].answer
			}
		}
	})
}

func (w *world) reset(id string) {
	v := int64(w.rng.IntN(100))
	if w.cfg.resetStorm {
		v = 0
	}
	if w.cfg.nearBound {
		// As near the bound as a reset may set, or nearer, within reach of
		// a few increments (refused: instances would not see it coming).
		v = counter.MaxReset - int64(w.rng.IntN(3)-1)*counter.MaxDelta
		if w.rng.IntN(3) == 0 {
			v = counter.MaxCount - int64(w.rng.IntN(3))*counter.MaxDelta
		}
		if w.rng.IntN(2) == 0 {
			v = -v
		}
	}
	w.resetOn(w.pick(), id, v)
}

func (w *world) resetOn(n int, id string, v int64) *op {
	o := w.newOp("resetCounter", id, n)
	o.value = v
	w.send(o, http.MethodPost, fmt.Sprintf(`{"counter_id":%q,"count":%d}`, id, v), func() { w.checkReset(o) })
	return o
}

func (w *world) reshard(id string) {
	o := w.newOp("reshardCounter", id, w.pick())
	w.send(o, http.MethodPost, fmt.Sprintf(`{"counter_id":%q,"num_shards":%d}`, id, 1+w.rng.IntN(6)), nil)
}

func (w *world) deleteOn(n int, id string) *op {
	o := w.newOp("deleteCounter", id, n)
	w.send(o, http.MethodPost, fmt.Sprintf(`{"counter_id":%q}`, id), func() { w.checkDelete(o) })
	return o
}

// reconcileOn is reconcileCounters for one counter.
func (w *world) reconcileOn(n int, id string) *op {
	o := w.newOp("reconcileCounters", id, n)
	w.send(o, http.MethodPost, fmt.Sprintf(`{"counter_id":%q}`, id), nil)
	return o
}

// audit is the full audit of every counter ({"full": true}), on instance
// n, from its cursor in the model.
func (w *world) audit(n int) *op {
	o := w.newOp("reconcileCounters", "", n)
	w.send(o, http.MethodPost, `{"full":true}`, nil)
	return o
}

// sweep is the scheduled reconcile run (Cloud Scheduler's call), on
// instance n, its cursor in the model.
func (w *world) sweep(n int) *op {
	o := w.newOp("reconcileCounters", "", n)
	w.send(o, http.MethodPost, `{}`, nil)
	return o
}

func (w *world) strongOn(n int, id string) *op {
	o := w.newOp("getCounter", id, n)
	w.send(o, http.MethodGet, "consistency=strong&counter_id="+url.QueryEscape(id), func() { w.checkStrong(o) })
	return o
}

// code is the error code o answered ("" for none).
func (o *op) code() string {
	if o.answer.Error == nil {
		return ""
	}
	return o.answer.Error.Code
}

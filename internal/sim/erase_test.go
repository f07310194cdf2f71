package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Erasures: an admin's eraseMember of a user while the user goes on
// liking and reacting from their devices with the ID token they had, and
// signs in again once refused. Tokens carry when they were issued (to
// the second, as Firebase's iat), so the instances' erasure gate runs as
// deployed.

// erasureCheck is the instances' ERASURE_CHECK: how often each looks for
// erasures begun.
const erasureCheck = time.Second

// erasure is one user's erasure: its calls, in order, until one answered
// complete.
type erasure struct {
	user     string
	calls    []*op
	complete *op
}

// began is when the erasure began at the latest: its first call's start
// (a token issued before is refused once the gate knows).
func (e *erasure) began() time.Time { return e.calls[0].start }

// gated is when every instance refuses the user's tokens issued before
// the erasure began: ERASURE_CHECK + FIRESTORE_DEADLINE after its first
// call that answered (which recorded it); zero while none has.
func (e *erasure) gated() time.Time {
	for _, c := range e.calls {
		if c.ok() {
			return c.end.Add(erasureCheck + deadline)
		}
	}
	return time.Time{}
}

// token is the ID token o is sent with, as the simulation's authenticate
// reads it: its user's uid and when it was issued (the user's latest, or
// the one o's device kept).
func (w *world) token(o *op) (string, time.Time) {
	if o.user == "admin" {
		return "sim:admin", time.Time{}
	}
	issued, ok := w.signedIn[o.user]
	if !ok {
		issued = w.epoch.Add(-30 * time.Minute).Truncate(time.Second)
		w.signedIn[o.user] = issued
	}
	if !o.kept.IsZero() {
		issued = o.kept
	}
	return fmt.Sprintf("sim:%s@%d", o.user, issued.Unix()), issued
}

// signInAgain is what a client does when its token is refused: a new one,
// issued now (a device that keeps its token does not).
func (w *world) signInAgain(o *op) {
	if o.status == http.StatusUnauthorized && o.user != "admin" && o.kept.IsZero() && w.signedIn[o.user].Before(time.Now().Truncate(time.Second)) {
		w.signedIn[o.user] = time.Now().Truncate(time.Second)
		w.tracef("  %s signs in again", o.user)
	}
}

// erase begins an erasure of user: its calls go on, as a backend's job
// makes them, with the page token each answered (after its Retry-After,
// or, at times, sooner),
// again after a 5xx or 429 with the last page token, until one answers
// complete.
func (w *world) erase(user string) {
	e := &erasure{user: user}
	w.erasures = append(w.erasures, e)
	w.eraseCall(e, "")
}

// keepsGoing: the user being erased goes on liking (or reacting) from a
// device that keeps the token it has (a deleted account's works for an
// hour), every 50–250 ms for ten seconds, past the time every instance
// refuses it, most often into its last pass's wait.
func (w *world) keepsGoing(user string) {
	ids := w.erasable(user)
	_, kept := w.token(&op{user: user})
	end := time.Now().Add(10 * time.Second)
	for t := time.Now(); t.Before(end); t = t.Add(time.Duration(50+w.rng.IntN(200)) * time.Millisecond) {
		id := ids[w.rng.IntN(len(ids))]
		w.at(t, func() {
			if isChoice(id) {
				o := w.newOp("incrementCounter", id, w.pick())
				o.user, o.react, o.choice, o.kept = user, true, randomChoice(w.rng), kept
				o.delta = choiceDelta(o.choice)
				w.sendTap(o, nil)
				return
			}
			o := w.newOp("incrementCounter", id, w.pick())
			o.user, o.delta, o.unique, o.kept = user, int64(1-2*w.rng.IntN(2)), true, kept
			w.sendIncrement(o)
		})
	}
}

func (w *world) eraseCall(e *erasure, page string) {
	o := w.newOp("eraseMember", "", w.pick())
	e.calls = append(e.calls, o)
	body, _ := json.Marshal(map[string]string{"uid": e.user, "page_token": page})
	if page == "" {
		body, _ = json.Marshal(map[string]string{"uid": e.user})
	}
	w.send(o, http.MethodPost, string(body), func() {
		var a struct {
			Complete   bool   `json:"complete"`
			Next       string `json:"next_page_token"`
			RetryAfter int    `json:"retry_after_seconds"`
		}
		json.Unmarshal(o.raw, &a)
		switch {
		case o.ok() && a.Complete:
			e.complete = o
			w.checkErased(e, o.end)
			return
		case len(e.calls) >= 40:
			w.problem("the erasure of %s is not complete after %d calls", e.user, len(e.calls))
			return
		case o.ok():
			page = a.Next
		case o.status < 500 && o.status != http.StatusTooManyRequests:
			w.problem("%s: the erasure of %s was refused: %s", o, e.user, o.code())
			return
		}
		wait := max(time.Duration(a.RetryAfter)*time.Second, 100*time.Millisecond)
		if w.rng.IntN(3) == 0 {
			wait = 100 * time.Millisecond // a job that does not wait as told
		}
		w.at(time.Now().Add(wait), func() { w.eraseCall(e, page) })
	})
}

// erasedWhile are the calls of the erasures of user as steps a serial
// order may take: each may have removed the user's membership of a
// counter at an instant while it ran, or up to its commits' deadline
// after an answer that was lost.
func (w *world) erasedWhile(user string) []*op {
	var out []*op
	for _, e := range w.erasures {
		if e.user == user {
			out = append(out, e.calls...)
		}
	}
	return out
}

// window is when op o may have applied: while it ran, up to its
// commits' deadline after it if its outcome is unknown, or any time up to
// forever if it never ended.
func (o *op) window(forever time.Time) (time.Time, time.Time) {
	switch {
	case !o.done:
		return o.start, forever
	case o.unknown():
		return o.start, o.end.Add(deadline)
	}
	return o.start, o.end
}

// refusedByErasure says whether o was refused for a token issued before
// its user's erasure began: a 401 of a user being erased.
func (w *world) refusedByErasure(o *op) bool {
	return o.status == http.StatusUnauthorized && len(w.erasedWhile(o.user)) > 0
}

// checkErased: when an erasure answers complete, and from then on (at is
// then, or the end), the user is a member of no live counter through a
// membership from before the erasure or made with a token issued before
// it (one of a counter deleted meanwhile is skipped: its purge removes
// it): every member document of theirs was created while a request of
// theirs on that counter, with a token issued since the erasure began,
// may have committed.
func (w *world) checkErased(e *erasure, done time.Time) {
	suffix := "/members/" + e.user
	for _, d := range w.model.Documents(root+"counters", w.fs(done)) {
		name := d.GetName()
		if !strings.HasSuffix(name, suffix) || strings.Count(strings.TrimPrefix(name, root), "/") != 3 {
			continue
		}
		id, _, _ := counterOf(name)
		if !isLive(w.counterDoc(id, w.fs(done))) {
			continue // of a counter deleted meanwhile: skipped, its purge removes it
		}
		if created, by := w.createdAt(name, done); !w.madeSince(e, id, created, by, done) {
			w.problem("%s answered complete; at %s %s is a member of %s, since %s, which no request of theirs with a token issued since the erasure began at %s made",
				e.complete, w.rel(done), e.user, id, w.rel(created), w.rel(e.began()))
		}
	}
}

// madeSince says whether a membership of e's user of counter id, created
// at created, may be one of their requests' on that counter (the
// incarnation live then) with a token issued since the erasure began (a
// user signs in again only when refused, which only an erasure does, and
// is erased once): a like or a choice, not refused, that may have
// committed then, from the server whose commit created it (by). A batch's
// item runs while its batch does.
func (w *world) madeSince(e *erasure, id string, created time.Time, by int, done time.Time) bool {
	k, _, _ := w.state(id, created)
	for _, o := range w.ops {
		if o.user != e.user || !o.issued.After(w.epoch) || o.counter != id || o.fn != "incrementCounter" || !w.mine(o, k) || w.serverOf(o.inst, o.fn) != by {
			continue
		}
		if o.react && o.choice == "" || !o.react && o.delta < 0 || o.done && !o.ok() && !o.unknown() {
			continue // it removes, or was refused
		}
		from, until := o.window(done)
		if o.batch != nil && !o.done {
			from, until = o.batch.start, done // the batch is in flight
		}
		if !created.Before(from) && !created.After(until) {
			return true
		}
	}
	return false
}

// checkErasures: at the end, the erasures that answered complete hold as
// they did then, and their gates held.
func (w *world) checkErasures() {
	for _, e := range w.erasures {
		if e.complete != nil {
			w.checkErased(e, time.Now())
		}
	}
	w.checkGate()
}

// checkGate: once every instance knows of an erasure, or it answered
// complete, a token of its user issued before it began makes nothing:
// every request made with one from then on is refused (401) or fails
// closed (a 5xx, or no answer).
func (w *world) checkGate() {
	for _, e := range w.erasures {
		gated := e.gated()
		if e.complete != nil && (gated.IsZero() || e.complete.end.Before(gated)) {
			gated = e.complete.end // complete: no such token makes anything from then on
		}
		if gated.IsZero() {
			continue
		}
		for _, o := range w.ops {
			if o.user != e.user || !o.issued.Before(e.began().Truncate(time.Second)) || !o.start.After(gated) || o.batch != nil {
				continue
			}
			if o.done && o.status < 500 && o.status != http.StatusUnauthorized {
				w.problem("%s, with a token issued before %s's erasure began at %s, answered %d past %s, when every instance knew of the erasure",
					o, e.user, w.rel(e.began()), o.status, w.rel(gated))
			}
		}
	}
}

// createdAt is when the commit that last created document name, at or
// before t, landed (the instances' clock), and the server that sent it.
func (w *world) createdAt(name string, t time.Time) (at time.Time, by int) {
	for _, rec := range w.commits {
		if rec.when.After(t) {
			break
		}
		for _, ch := range rec.changes {
			if ch.Name == name && ch.Before == nil && ch.After != nil {
				at, by = rec.when, rec.inst
			}
		}
	}
	return at, by
}

// planErasures erases a user or two in the first half of the work, while
// they go on: a liker, at times the one whose likes contend through
// every instance, erased in the middle of it, and a reactor.
func (w *world) planErasures(start time.Time) {
	at := func() time.Time { return start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor / 2)))) }
	liker := users[w.rng.IntN(len(users))]
	t := at()
	if w.cfg.contention && w.rng.IntN(2) == 0 {
		liker, t = users[0], w.contentionFrom.Add(time.Duration(w.rng.IntN(800))*time.Millisecond)
	}
	erase := func(t time.Time, user string) {
		w.at(t, func() {
			w.erase(user)
			w.keepsGoing(user)
		})
	}
	if len(w.erasable(liker)) > 0 {
		erase(t, liker)
	}
	if reactor := reactors[w.rng.IntN(len(reactors))]; len(w.erasable(reactor)) > 0 && w.rng.IntN(2) == 0 {
		erase(at(), reactor)
	}
}

// erasable are the counters user likes (a liker) or reacts on (a
// reactor).
func (w *world) erasable(user string) []string {
	var ids []string
	for _, id := range w.counters {
		if isChoice(id) == strings.HasPrefix(user, "r") && (isChoice(id) || w.isUnique(id)) {
			ids = append(ids, id)
		}
	}
	return ids
}

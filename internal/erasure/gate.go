// Package erasure holds what an erasure (eraseMember) needs beside the
// increments it sends: the gate by which every instance refuses an
// erased user's tokens issued before, and the signed page token that
// says where an erasure stands.
package erasure

import (
	"context"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// The gate: a user's ID tokens issued before their erasure began make
// nothing afterwards, on any instance, within ERASURE_CHECK +
// FIRESTORE_DEADLINE of the erasure's first call's answer, with no call
// to Auth per request (a deleted or disabled account's token stays valid
// until it expires, an hour, as Firebase checks it). eraseMember records
// when it began; each instance reads the erasures recorded since its last
// look, once per ERASURE_CHECK while requests come, and refuses the
// tokens of an erased user issued before. A token issued after works: an
// erasure is not a ban.
//
// One look at a time per instance, whoever it serves. Once what an
// instance knows is ERASURE_CHECK old, the next request looks, and those
// that come while it does are answered from what it knew, a look's
// deadline older at most: a slow read holds nobody. Past that (a cold
// instance, or one idle longer), requests wait for the one look under
// way, and are refused (503) when it fails: so a crowd of requests on a
// cold instance costs one read, not one each, and no caller's budget
// needs to pay for it.

// TokenLife is how long an ID token may be taken: Firebase's hour, and
// the five minutes of clock skew the Admin SDK allows.
const TokenLife = time.Hour + 5*time.Minute

// Slack is how long before an erasure began a membership is gone over
// again, and a record is read again: clocks of instances differ a little.
const Slack = time.Minute

// Since reads the erasures recorded after since: when each began, by uid.
type Since func(ctx context.Context, since time.Time) (map[string]time.Time, error)

// Gate is what one instance knows of recent erasures.
type Gate struct {
	check, deadline time.Duration
	now             func() time.Time
	since           Since

	mu       sync.Mutex
	began    map[string]time.Time // by uid
	lookedAt time.Time            // when the latest look that succeeded began (zero: never)
	look     *look                // the look under way (nil: none)
}

// look is one read of the erasures recorded since a time, which requests
// may wait for: err is set before done is closed.
type look struct {
	done chan struct{}
	err  error
}

// NewGate returns the gate of an instance that looks every check
// (ERASURE_CHECK), each look with read under deadline
// (FIRESTORE_DEADLINE).
func NewGate(check, deadline time.Duration, now func() time.Time, read Since) *Gate {
	return &Gate{check: check, deadline: deadline, now: now, since: read}
}

// Bound is how old, at most, what an instance knows of erasures is when
// it admits a token: a look check old, and another under way, up to its
// deadline.
func (g *Gate) Bound() time.Duration {
	return g.check + g.deadline
}

// Began is when uid's erasure began, within a token's life (zero: none),
// as this instance knows it from a look begun at most Bound ago (check,
// when no look is under way). The look is the instance's own read, one at
// a time, no caller's budget pays for it: one a check while requests
// come, with a read per erasure recorded since the last (within a token's
// life). When what it knows is older than Bound, the request waits for
// the look, and is refused (503) if it fails: the gate fails closed.
func (g *Gate) Began(ctx context.Context, uid string) (time.Time, error) {
	g.mu.Lock()
	now := g.now()
	age := now.Sub(g.lookedAt)
	current := !g.lookedAt.IsZero() && age < g.Bound()
	if current && (age < g.check || g.look != nil) {
		began := g.began[uid]
		g.mu.Unlock()
		return began, nil
	}
	l := g.look
	if l == nil {
		l = &look{done: make(chan struct{})}
		g.look = l
		go g.read(ctx, now, l) // for this request and any that come meanwhile
	}
	g.mu.Unlock()
	return g.knownOnceDone(ctx, uid, l, current)
}

// knownOnceDone is when uid's erasure began once look l ended; on its
// failure, what was known when fallback (it is still within Bound), or a
// refusal (503).
func (g *Gate) knownOnceDone(ctx context.Context, uid string, l *look, fallback bool) (time.Time, error) {
	select {
	case <-l.done:
	case <-ctx.Done():
		return time.Time{}, errs.Retryable(ctx.Err(), time.Second, "cannot check the account's erasures right now; retry")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if l.err != nil && !fallback {
		return time.Time{}, errs.Retryable(l.err, time.Second, "cannot check the account's erasures right now; retry")
	}
	return g.began[uid], nil
}

// read is look l, begun at now: the erasures recorded since the last
// look (a little before, for a record committed while it ran, or written
// by a clock behind; none older than a token's life), under the gate's
// deadline and no caller's cancellation, since others may count on it.
func (g *Gate) read(ctx context.Context, now time.Time, l *look) {
	g.mu.Lock()
	since := now.Add(-TokenLife)
	if last := g.lookedAt.Add(-Slack); !g.lookedAt.IsZero() && last.After(since) {
		since = last
	}
	g.mu.Unlock()
	lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.deadline)
	defer cancel()
	found, err := g.since(lookCtx, since)
	g.mu.Lock()
	defer g.mu.Unlock()
	defer close(l.done)
	g.look, l.err = nil, err
	if err != nil {
		return
	}
	if now.After(g.lookedAt) {
		g.lookedAt = now
	}
	for u, b := range found {
		g.noteLocked(u, b)
	}
	for u, b := range g.began {
		if now.After(b.Add(TokenLife)) {
			delete(g.began, u) // no token issued before it lives on
		}
	}
}

// Note remembers that uid's erasure began at began: this instance's own.
func (g *Gate) Note(uid string, began time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteLocked(uid, began)
}

// noteLocked remembers uid's erasure began at began (the later of two).
func (g *Gate) noteLocked(uid string, began time.Time) {
	if g.began == nil {
		g.began = map[string]time.Time{}
	}
	if began.After(g.began[uid]) {
		g.began[uid] = began
	}
}

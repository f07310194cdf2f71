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
	"github.com/shardcount/shardcount/internal/ledger"
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
// No request waits for another's look. Once what an instance knows is
// ERASURE_CHECK old, the next request looks, and those that come while
// it does are answered from what it knew, a look's deadline older at
// most; past that, each request looks for itself. So one slow read never
// holds a crowd of requests that it then lets go at once, to race into
// one commit batch in an order no seed of the simulation replays. The
// price: on a cold instance, or one idle past the bound, a read for each
// request that comes before a look ends.

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
	read            Since

	mu       sync.Mutex
	began    map[string]time.Time // by uid
	lookedAt time.Time            // when the latest look that ended began (zero: never)
	looking  bool                 // a look is under way for requests that found lookedAt check old
}

// NewGate returns the gate of an instance that looks every check
// (ERASURE_CHECK), each look with read under deadline
// (FIRESTORE_DEADLINE): the instance's own read (ledger.Own, booked as
// "erasures"), which no caller's budget pays for.
func NewGate(check, deadline time.Duration, now func() time.Time, read Since) *Gate {
	return &Gate{check: check, deadline: deadline, now: now, read: read}
}

// Bound is how old, at most, what an instance knows of erasures is when
// it admits a token: a look check old, and another under way, up to its
// deadline.
func (g *Gate) Bound() time.Duration {
	return g.check + g.deadline
}

// Began is when uid's erasure began, within a token's life (zero: none),
// as this instance knows it from a look begun at most Bound ago (check,
// when no look is under way). The look is the instance's own read, no
// caller's budget pays for it: one a check while requests come, with a
// read per erasure recorded since the last (within a token's life), but
// on a cold instance, or after Bound without requests, where each request
// that comes before a look ended looks for itself. When one that must
// look cannot, it is refused (503): the gate fails closed.
func (g *Gate) Began(ctx context.Context, uid string) (time.Time, error) {
	g.mu.Lock()
	now := g.now()
	age := now.Sub(g.lookedAt)
	known := !g.lookedAt.IsZero()
	switch {
	case known && age < g.check, known && age < g.Bound() && g.looking:
		began := g.began[uid]
		g.mu.Unlock()
		return began, nil
	}
	shared := known && age < g.Bound() // this look is the one the others wait out
	if shared {
		g.looking = true
	}
	since := now.Add(-TokenLife)
	if known {
		// A record committed while the last look ran, or written by a
		// clock behind; none older than a token's life.
		if last := g.lookedAt.Add(-Slack); last.After(since) {
			since = last
		}
	}
	g.mu.Unlock()
	// Others count on a shared look: a caller that gives up does not end it.
	lookCtx, cancel := ledger.Own(ctx, "erasures", time.Now().Add(g.deadline))
	defer cancel()
	found, err := g.read(lookCtx, since)
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared {
		g.looking = false
	}
	if err != nil {
		if shared {
			return g.began[uid], nil // what it knew is within Bound still
		}
		return time.Time{}, errs.Retryable(err, time.Second, "cannot check the account's erasures right now; retry")
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
	return g.began[uid], nil
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

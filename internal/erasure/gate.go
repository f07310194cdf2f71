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
// most; past that (a cold instance, or one idle past the bound), each
// reads its own user's record, one read, however many erasures there
// were. So one slow read never holds a crowd of requests that it then
// lets go at once, to race into one commit batch in an order no seed of
// the simulation replays, and a new instance under load does not read
// every record once per request.

// TokenLife is how long an ID token may be taken: Firebase's hour, and
// the five minutes of clock skew the Admin SDK allows.
const TokenLife = time.Hour + 5*time.Minute

// Slack is how long before an erasure began a membership is gone over
// again, and a record is read again: clocks of instances differ a little.
const Slack = time.Minute

// Since reads the erasures recorded after since: when each began, by uid.
type Since func(ctx context.Context, since time.Time) (map[string]time.Time, error)

// Latest reads when uid's latest recorded erasure began (zero: none).
type Latest func(ctx context.Context, uid string) (time.Time, error)

// Gate is what one instance knows of recent erasures.
type Gate struct {
	check, deadline time.Duration
	now             func() time.Time
	read            Since
	latest          Latest

	mu       sync.Mutex
	began    map[string]time.Time // by uid
	lookedAt time.Time            // when the latest look that ended began (zero: never)
	looking  bool                 // a look is under way
}

// NewGate returns the gate of an instance that looks every check
// (ERASURE_CHECK), each look with read under deadline
// (FIRESTORE_DEADLINE), and reads one user's latest record with latest
// while a look it cannot count on is under way: the instance's own reads
// (ledger.Own, booked as "erasures"), which no caller's budget pays for.
func NewGate(check, deadline time.Duration, now func() time.Time, read Since, latest Latest) *Gate {
	return &Gate{check: check, deadline: deadline, now: now, read: read, latest: latest}
}

// Bound is how old, at most, what an instance knows of erasures is when
// it admits a token: a look check old, and another under way, up to its
// deadline.
func (g *Gate) Bound() time.Duration {
	return g.check + g.deadline
}

// Began is when uid's erasure began, within a token's life (zero: none),
// as this instance knows it from a look begun at most Bound ago (check,
// when no look is under way), or from uid's own record. The look is the
// instance's own read, no caller's budget pays for it: one a check while
// requests come, with a read per erasure recorded since the last (within
// a token's life); on a cold instance, or after Bound without requests,
// those that come while it is under way read their user's record, one
// read each. When one that must read cannot, it is refused (503): the
// gate fails closed.
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
	case g.looking:
		g.mu.Unlock()
		return g.own(ctx, uid)
	}
	shared := known && age < g.Bound() // what it knew answers others meanwhile
	g.looking = true
	since := now.Add(-TokenLife)
	if known {
		// A record committed while the last look ran, or written by a
		// clock behind; none older than a token's life.
		if last := g.lookedAt.Add(-Slack); last.After(since) {
			since = last
		}
	}
	g.mu.Unlock()
	lookCtx, cancel := g.ownRead(ctx)
	defer cancel()
	found, err := g.read(lookCtx, since)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.looking = false
	if err != nil {
		if shared {
			return g.began[uid], nil // what it knew is within Bound still
		}
		return time.Time{}, unavailable(err)
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

// own reads uid's latest record, and remembers it.
func (g *Gate) own(ctx context.Context, uid string) (time.Time, error) {
	readCtx, cancel := g.ownRead(ctx)
	defer cancel()
	began, err := g.latest(readCtx, uid)
	if err != nil {
		return time.Time{}, unavailable(err)
	}
	if g.now().After(began.Add(TokenLife)) {
		return time.Time{}, nil // no token issued before it lives on
	}
	g.Note(uid, began)
	return began, nil
}

// ownRead is ctx for a read of the instance's own, under the gate's
// deadline: others count on a look, so a caller that gives up does not
// end it.
func (g *Gate) ownRead(ctx context.Context) (context.Context, context.CancelFunc) {
	return ledger.Own(ctx, "erasures", time.Now().Add(g.deadline))
}

// unavailable refuses a request whose user's erasures the gate could not
// read: it fails closed.
func unavailable(err error) error {
	return errs.Retryable(err, time.Second, "cannot check the account's erasures right now; retry")
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

package core

import (
	"context"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
)

// The erasure gate: a user's ID tokens issued before their erasure began
// make nothing afterwards, on any instance, within ERASURE_CHECK +
// FIRESTORE_DEADLINE of the erasure's first call's answer, with no call to Auth
// per request (a deleted or disabled account's token stays valid until
// it expires, an hour, as Firebase checks it). eraseMember records when
// it began; each instance reads the erasures recorded since its last
// look, once per ERASURE_CHECK while requests come, and refuses
// the tokens of an erased user issued before. A token issued after works:
// an erasure is not a ban.
//
// No request waits for another's look. Once what an instance knows is
// ERASURE_CHECK old, the next request looks, and those that come while
// it does are answered from what it knew, a look's deadline older at
// most; past that, each request looks for itself. So one slow read never
// holds a crowd of requests that it then lets go at once.

// tokenLife is how long an ID token may be taken: Firebase's hour, and
// the five minutes of clock skew the Admin SDK allows.
const tokenLife = time.Hour + 5*time.Minute

// erasureGate is what one instance knows of recent erasures.
type erasureGate struct {
	mu       sync.Mutex
	began    map[string]time.Time // by uid
	lookedAt time.Time            // when the latest look that ended began (zero: never)
	looking  bool                 // a look is under way for requests that found lookedAt ERASURE_CHECK old
}

// gateBound is how old, at most, what an instance knows of erasures is
// when it admits a token: a look ERASURE_CHECK old, and another under
// way, up to its deadline.
func (core *Core) gateBound() time.Duration {
	return core.cfg.ErasureCheck + core.cfg.FirestoreDeadline
}

// admitAfterErasure refuses caller's token when it was issued before the
// caller's erasure began. The gate's look is the instance's own read, no
// caller's budget pays for it: one a ERASURE_CHECK while requests come,
// with a read per erasure recorded since the last (within a token's
// life), but on a cold instance, or after ERASURE_CHECK +
// FIRESTORE_DEADLINE without requests, where each request that comes
// before a look ended looks for itself. When one that must look cannot,
// the call is refused too (503): the gate fails closed.
func (core *Core) admitAfterErasure(ctx context.Context, caller Caller) error {
	if caller.User == "" || caller.IssuedAt.IsZero() {
		return nil
	}
	began, err := core.erasureBegan(ctx, caller.User)
	if err != nil {
		return err
	}
	if !began.IsZero() && caller.IssuedAt.Before(began) {
		return errs.New(errs.Unauthenticated, "Authorization: this ID token was issued before the account's erasure began (%s): sign in again",
			began.UTC().Format(time.RFC3339))
	}
	return nil
}

// erasureBegan is when uid's erasure began, within a token's life (zero:
// none), as this instance knows it from a look begun at most gateBound
// ago (ERASURE_CHECK, when no look is under way).
func (core *Core) erasureBegan(ctx context.Context, uid string) (time.Time, error) {
	g := &core.erasures
	g.mu.Lock()
	now := core.now()
	age := now.Sub(g.lookedAt)
	known := !g.lookedAt.IsZero()
	switch {
	case known && age < core.cfg.ErasureCheck, known && age < core.gateBound() && g.looking:
		began := g.began[uid]
		g.mu.Unlock()
		return began, nil
	}
	shared := known && age < core.gateBound() // this look is the one the others wait out
	if shared {
		g.looking = true
	}
	since := now.Add(-tokenLife)
	if known {
		// A record committed while the last look ran, or written by a
		// clock behind; none older than a token's life.
		if last := g.lookedAt.Add(-eraseSlack); last.After(since) {
			since = last
		}
	}
	g.mu.Unlock()
	// Others count on a shared look: a caller that gives up does not end it.
	lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.cfg.FirestoreDeadline)
	defer cancel()
	lookCtx, _ = ledger.New(ledger.WithLabel(lookCtx, "erasures"), true)
	found, err := core.members.ErasuresSince(lookCtx, since)
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared {
		g.looking = false
	}
	if err != nil {
		if shared {
			return g.began[uid], nil // what it knew is within gateBound still
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
		if now.After(b.Add(tokenLife)) {
			delete(g.began, u) // no token issued before it lives on
		}
	}
	return g.began[uid], nil
}

// noteLocked remembers uid's erasure began at began (the later of two).
func (g *erasureGate) noteLocked(uid string, began time.Time) {
	if g.began == nil {
		g.began = map[string]time.Time{}
	}
	if began.After(g.began[uid]) {
		g.began[uid] = began
	}
}

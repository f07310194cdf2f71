package core

import (
	"context"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
)

// The erasure gate: a user's ID tokens issued before their erasure began
// make nothing afterwards, on any instance, within ERASURE_CHECK of the
// erasure's first call, with no call to Auth per request (a deleted or
// disabled account's token stays valid until it expires, an hour, as
// Firebase checks it). eraseMember records when it began; each instance
// reads the erasures recorded since its last look, at most once per
// ERASURE_CHECK while requests come, and refuses the tokens of an erased
// user issued before. A token issued after works: an erasure is not a ban.

// tokenLife is how long an ID token may be taken: Firebase's hour, and
// the five minutes of clock skew the Admin SDK allows.
const tokenLife = time.Hour + 5*time.Minute

// erasureGate is what one instance knows of recent erasures.
type erasureGate struct {
	mu       sync.Mutex
	began    map[string]time.Time // by uid
	lookedAt time.Time            // when the last look began (zero: never)
	looking  chan struct{}        // closed when the look under way ends
}

// admitAfterErasure refuses caller's token when it was issued before the
// caller's erasure began. The gate's look is the instance's own read (no
// caller's budget pays for it: at most one a ERASURE_CHECK, with a read
// per erasure recorded since the last); when it fails, the call is
// refused too (503): the gate fails closed.
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
// none), as this instance knows it from a look at most ERASURE_CHECK old.
func (core *Core) erasureBegan(ctx context.Context, uid string) (time.Time, error) {
	g := &core.erasures
	for {
		g.mu.Lock()
		now := core.now()
		if !g.lookedAt.IsZero() && now.Sub(g.lookedAt) < core.cfg.ErasureCheck {
			began := g.began[uid]
			g.mu.Unlock()
			return began, nil
		}
		if ch := g.looking; ch != nil {
			g.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return time.Time{}, errs.Retryable(ctx.Err(), time.Second, "cannot check the account's erasures right now; retry")
			}
		}
		ch := make(chan struct{})
		g.looking = ch
		since := now.Add(-tokenLife)
		if !g.lookedAt.IsZero() {
			since = g.lookedAt.Add(-eraseSlack) // a record committed while the last look ran, or written by a clock behind
		}
		g.mu.Unlock()
		lookCtx, _ := ledger.New(ledger.WithLabel(ctx, "erasures"), true)
		found, err := core.members.ErasuresSince(lookCtx, since)
		g.mu.Lock()
		if err == nil {
			g.lookedAt = now
			for u, b := range found {
				g.noteLocked(u, b)
			}
			for u, b := range g.began {
				if now.After(b.Add(tokenLife)) {
					delete(g.began, u) // no token issued before it lives on
				}
			}
		}
		g.looking = nil
		close(ch)
		g.mu.Unlock()
		if err != nil {
			return time.Time{}, err
		}
	}
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

package core

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/erasure"
	"github.com/shardcount/shardcount/internal/errs"
)

// newGate is the instance's erasure gate (internal/erasure).
func (core *Core) newGate() *erasure.Gate {
	return erasure.NewGate(core.cfg.ErasureCheck, core.cfg.FirestoreDeadline, core.now, core.members.ErasuresSince)
}

// admitAfterErasure refuses caller's token when it was issued before the
// caller's erasure began, as the gate knows it.
func (core *Core) admitAfterErasure(ctx context.Context, caller Caller) error {
	if caller.User == "" || caller.IssuedAt.IsZero() {
		return nil
	}
	began, err := core.erasures.Began(ctx, caller.User)
	if err != nil {
		return err
	}
	if !began.IsZero() && caller.IssuedAt.Before(began) {
		return errs.New(errs.Unauthenticated, "Authorization: this ID token was issued before the account's erasure began (%s): sign in again",
			began.UTC().Format(time.RFC3339))
	}
	return nil
}

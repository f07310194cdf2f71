package core

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/erasure"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/wire"
)

// erasePage is how many memberships one step of an erasure removes: one
// request of increments, each counter's commit in parallel.
const erasePage = 100

// EraseMember removes a user from every unique counter (account deletion,
// spam clean-up, GDPR erasure), for admins only: each counter down by
// exactly one, in the commit that deletes the member document, by the
// path every unlike takes. A call goes on while half its deadline is
// left; its page token holds when the erasure began and where it stopped.
// Its first call records when it began: from then on, within the gate's
// bound, every instance refuses the user's tokens issued before
// (internal/erasure). Once a pass reaches the oldest membership, and every
// instance refuses those tokens and what they sent has landed
// (RetryAfterSeconds says when), the memberships since the erasure began
// (likes made meanwhile, newest first) are gone over again; it is
// complete when none is left to remove. A call after completion, without
// a page token, begins another erasure.
func (core *Core) EraseMember(ctx context.Context, caller Caller, body wire.EraseMemberRequest) (wire.EraseMemberResponse, error) {
	if !caller.Admin {
		return wire.EraseMemberResponse{}, errs.New(errs.PermissionDenied, "eraseMember is for admins (your app's backend)")
	}
	uid := deref(body.UID)
	if err := counter.ValidateUID("uid", uid); err != nil {
		return wire.EraseMemberResponse{}, err
	}
	cur, err := erasure.Open(deref(body.PageToken), uid, core.now, func() (erasure.Record, error) { return core.members.Erasure(ctx, uid) })
	if err != nil {
		return wire.EraseMemberResponse{}, err
	}
	if cur.Began.IsZero() {
		// The erasure begins: every instance refuses the user's tokens
		// issued before, within the gate's bound.
		cur = erasure.Begin(core.now())
		stands, err := core.members.RecordErasure(ctx, uid, cur.Began, cur.Began.Add(erasure.TokenLife), cur.Key)
		if err != nil {
			return wire.EraseMemberResponse{}, err
		}
		cur.Began, cur.Key = stands.Began, stands.Key // of two begun at once, the first landed's key (its tokens are this call's too)

		core.erasures.Note(uid, cur.Began)
	}
	resp := wire.EraseMemberResponse{UID: uid}
	lastPass := cur.Began.Add(core.lastPassAfter())
	stopAt := core.now().Add(core.cfg.FirestoreDeadline / 2)
	if d, ok := ctx.Deadline(); ok {
		stopAt = core.now().Add(d.Sub(core.now()) / 2)
	}
	for core.now().Before(stopAt) {
		if wait := lastPass.Sub(core.now()); cur.Since && wait > 0 {
			// A call sooner than told: the last pass is not due yet.
			resp.NextPageToken = cur.Token()
			resp.RetryAfterSeconds = int((wait + time.Second - 1) / time.Second)
			return resp, nil
		}
		page, err := core.members.Memberships(ctx, uid, cur.After, erasePage)
		if err != nil {
			return resp, err
		}
		if cur.Since {
			// Going over those since the erasure began: older ones were.
			page = slices.DeleteFunc(page, func(m counter.Membership) bool { return m.JoinedAt.Before(cur.Began.Add(-erasure.Slack)) })
		}
		if len(page) == 0 {
			if cur.Since {
				resp.Complete = true // nothing left since the erasure began
				return resp, nil
			}
			cur.After, cur.Since = counter.Membership{}, true // from the newest again, those since it began, once due
			resp.NextPageToken = cur.Token()
			continue
		}
		cur.After = page[len(page)-1]
		removed, skipped, err := core.removeMember(ctx, caller, uid, page)
		resp.Counters, resp.Skipped = resp.Counters+removed, resp.Skipped+skipped
		if err != nil {
			return resp, err // the same page token again goes on from there
		}
		resp.NextPageToken = cur.Token()
	}
	if resp.NextPageToken == "" {
		resp.NextPageToken = cur.Token() // no page in time: go on from the same place
	}
	return resp, nil
}

// lastPassAfter is how long after an erasure began its last pass, over
// what came since, goes: once no token of before can make anything. Its
// record lands within FIRESTORE_DEADLINE; every instance refuses those
// tokens the gate's bound after that; an increment admitted just before may
// wait its FIRESTORE_DEADLINE to be taken by a group commit's flush,
// which has a FIRESTORE_DEADLINE of its own; and a second for clocks.
func (core *Core) lastPassAfter() time.Duration {
	return core.cfg.FirestoreDeadline + core.erasures.Bound() + 2*core.cfg.FirestoreDeadline + time.Second
}

// removeMember removes uid from the counters of a page of its
// memberships, and counts those it removed and those it skipped.
func (core *Core) removeMember(ctx context.Context, caller Caller, uid string, page []counter.Membership) (removed, skipped int, err error) {
	var items []wire.IncrementItem
	leave := int64(-1)
	for i := range page {
		if page[i].CounterID == "" {
			skipped++ // an app's own members document
			continue
		}
		items = append(items, wire.IncrementItem{CounterID: &page[i].CounterID, Delta: &leave, Member: &uid})
	}
	for i, r := range core.increment(ctx, caller, items, nil, anErasure) {
		switch e, _ := errors.AsType[*errs.Error](r.Err); {
		case r.Err == nil:
			if r.Response.Changed != nil && *r.Response.Changed {
				removed++
			}
		case errs.Is(r.Err, errs.NotFound): // deleted meanwhile (its purge removes it), or by hand (dropped here, counting nothing)
			dropped, err := core.members.DropOrphan(ctx, *items[i].CounterID, uid)
			if err != nil {
				return removed, skipped, err
			}
			if !dropped {
				skipped++
			}
		case e != nil && strings.HasSuffix(e.Field, "member"):
			skipped++ // of a kind that keeps no members now
		default:
			return removed, skipped, r.Err
		}
	}
	return removed, skipped, nil
}

// newGate is the instance's erasure gate (internal/erasure).
func (core *Core) newGate() *erasure.Gate {
	latest := func(ctx context.Context, uid string) (time.Time, error) {
		r, err := core.members.Erasure(ctx, uid)
		return r.Began, err
	}
	return erasure.NewGate(core.cfg.ErasureCheck, core.cfg.FirestoreDeadline, core.now, core.members.ErasuresSince, latest)
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

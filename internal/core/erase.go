package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// EraseMemberRequest is the input of eraseMember: a user, and where the
// call before stopped (its next_page_token).
type EraseMemberRequest struct {
	UID       *string `json:"uid"`
	PageToken *string `json:"page_token"`
}

// EraseMemberResponse says how far an erasure went: Counters is how many
// counters this call removed the user from, Skipped how many memberships
// it could not remove (of counters deleted meanwhile, which their purge
// removes, or no longer unique, or of an app's own collection named
// members). Complete is false when more is left: the next call, with
// NextPageToken, goes on.
type EraseMemberResponse struct {
	UID           string `json:"uid"`
	Counters      int    `json:"counters"`
	Skipped       int    `json:"skipped"`
	Complete      bool   `json:"complete"`
	NextPageToken string `json:"next_page_token,omitempty"`
	// RetryAfterSeconds, with Complete false: call again with
	// NextPageToken no sooner; the last pass waits until every instance
	// refuses the user's tokens of before and the commits they sent have
	// landed (lastPassAfter).
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
}

// erasePage is how many memberships one step of an erasure removes: one
// request of increments, each counter's commit in parallel.
const erasePage = 100

// EraseMember removes a user from every unique counter (account deletion,
// spam clean-up, GDPR erasure), for admins only: each counter down by
// exactly one, in the commit that deletes the member document, by the
// path every unlike takes. A call goes on while half its deadline is
// left; its page token holds when the erasure began and where it stopped.
// Its first call records when it began: from then on, within gateBound,
// every instance refuses the user's tokens issued before
// (erasures.go). Once a pass reaches the oldest membership, and every
// instance refuses those tokens and what they sent has landed
// (RetryAfterSeconds says when), the memberships since the erasure began
// (likes made meanwhile, newest first) are gone over again; it is
// complete when none is left to remove. A call after completion, without
// a page token, begins another erasure.
func (core *Core) EraseMember(ctx context.Context, caller Caller, body EraseMemberRequest) (EraseMemberResponse, error) {
	if !caller.Admin {
		return EraseMemberResponse{}, errs.New(errs.PermissionDenied, "eraseMember is for admins (your app's backend)")
	}
	uid := deref(body.UID)
	if err := counter.ValidateUID("uid", uid); err != nil {
		return EraseMemberResponse{}, err
	}
	cur, err := core.erasureCursor(ctx, deref(body.PageToken), uid)
	if err != nil {
		return EraseMemberResponse{}, err
	}
	if cur.began.IsZero() {
		// The erasure begins: every instance refuses the user's tokens
		// issued before, within gateBound. Firestore keeps
		// microseconds: the token's time is the record's.
		cur.began, cur.key = core.now().Truncate(time.Microsecond), make([]byte, sha256.Size)
		rand.Read(cur.key)
		if err := core.members.RecordErasure(ctx, uid, cur.began, cur.began.Add(tokenLife), cur.key); err != nil {
			return EraseMemberResponse{}, err
		}
		core.erasures.mu.Lock()
		core.erasures.noteLocked(uid, cur.began)
		core.erasures.mu.Unlock()
	}
	resp := EraseMemberResponse{UID: uid}
	lastPass := cur.began.Add(core.lastPassAfter())
	stopAt := core.now().Add(core.cfg.FirestoreDeadline / 2)
	if d, ok := ctx.Deadline(); ok {
		stopAt = core.now().Add(d.Sub(core.now()) / 2)
	}
	for core.now().Before(stopAt) {
		if wait := lastPass.Sub(core.now()); cur.since && wait > 0 {
			// A call sooner than told: the last pass is not due yet.
			resp.NextPageToken = cur.token()
			resp.RetryAfterSeconds = int((wait + time.Second - 1) / time.Second)
			return resp, nil
		}
		page, err := core.members.Memberships(ctx, uid, cur.after, erasePage)
		if err != nil {
			return resp, err
		}
		if cur.since {
			// Going over those since the erasure began: older ones were.
			page = slices.DeleteFunc(page, func(m counter.Membership) bool { return m.JoinedAt.Before(cur.began.Add(-eraseSlack)) })
		}
		if len(page) == 0 {
			if cur.since {
				resp.Complete = true // nothing left since the erasure began
				return resp, nil
			}
			cur.after, cur.since = counter.Membership{}, true // from the newest again, those since it began, once due
			resp.NextPageToken = cur.token()
			continue
		}
		cur.after = page[len(page)-1]
		removed, skipped, err := core.removeMember(ctx, caller, uid, page)
		resp.Counters, resp.Skipped = resp.Counters+removed, resp.Skipped+skipped
		if err != nil {
			return resp, err // the same page token again goes on from there
		}
		resp.NextPageToken = cur.token()
	}
	if resp.NextPageToken == "" {
		resp.NextPageToken = cur.token() // no page in time: go on from the same place
	}
	return resp, nil
}

// lastPassAfter is how long after an erasure began its last pass, over
// what came since, goes: once no token of before can make anything. Its
// record lands within FIRESTORE_DEADLINE; every instance refuses those
// tokens gateBound after that; an increment admitted just before may
// wait its FIRESTORE_DEADLINE to be taken by a group commit's flush,
// which has a FIRESTORE_DEADLINE of its own; and a second for clocks.
func (core *Core) lastPassAfter() time.Duration {
	return core.cfg.FirestoreDeadline + core.gateBound() + 2*core.cfg.FirestoreDeadline + time.Second
}

// eraseSlack is how long before an erasure began a membership is gone
// over again: clocks of instances differ a little.
const eraseSlack = time.Minute

// removeMember removes uid from the counters of a page of its
// memberships, and counts those it removed and those it skipped.
func (core *Core) removeMember(ctx context.Context, caller Caller, uid string, page []counter.Membership) (removed, skipped int, err error) {
	var items []IncrementItem
	leave := int64(-1)
	for i := range page {
		if page[i].CounterID == "" {
			skipped++ // an app's own members document
			continue
		}
		items = append(items, IncrementItem{CounterID: &page[i].CounterID, Delta: &leave, Member: &uid, erase: true})
	}
	for _, r := range core.increment(ctx, caller, items, nil, true) {
		switch e, _ := errors.AsType[*errs.Error](r.Err); {
		case r.Err == nil:
			if r.Response.Changed != nil && *r.Response.Changed {
				removed++
			}
		case errs.Is(r.Err, errs.NotFound), e != nil && strings.HasSuffix(e.Field, "member"):
			skipped++ // deleted meanwhile (its purge removes it), or no longer unique
		default:
			return removed, skipped, r.Err
		}
	}
	return removed, skipped, nil
}

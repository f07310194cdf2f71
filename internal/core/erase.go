package core

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// EraseMemberRequest is the input of eraseMember.
type EraseMemberRequest struct {
	UID *string `json:"uid"`
}

// EraseMemberResponse says how far an erasure went: Counters is how many
// counters this call removed the user from; Complete is false when more
// is left for the next call.
type EraseMemberResponse struct {
	UID      string `json:"uid"`
	Counters int    `json:"counters"`
	Complete bool   `json:"complete"`
}

// erasePage is how many memberships one step of an erasure removes: one
// request of increments, each counter's commit in parallel.
const erasePage = 100

// EraseMember removes a user from every unique counter (account deletion,
// spam clean-up, GDPR erasure), for admins only: each counter down by
// exactly one, in the commit that deletes the member document, by the
// path every unlike takes. It goes on while half the request's deadline
// is left, and says whether it is complete; a call after completion finds
// nothing to do. Member documents of deleted counters are left to their
// purge.
func (core *Core) EraseMember(ctx context.Context, caller Caller, body EraseMemberRequest) (EraseMemberResponse, error) {
	if !caller.Admin {
		return EraseMemberResponse{}, errs.New(errs.PermissionDenied, "eraseMember is for admins (your app's backend)")
	}
	uid := deref(body.UID)
	if counter.ValidateMemberID(uid) != nil {
		return EraseMemberResponse{}, errs.Invalid("uid", "must be a Firebase uid: 1 to 128 characters, no '/', not '.' or '..' or __…__")
	}
	resp := EraseMemberResponse{UID: uid}
	stopAt := time.Now().Add(core.cfg.FirestoreDeadline / 2)
	if d, ok := ctx.Deadline(); ok {
		stopAt = time.Now().Add(time.Until(d) / 2)
	}
	var after counter.Membership
	for time.Now().Before(stopAt) {
		page, err := core.counters.Memberships(ctx, uid, after, erasePage)
		if err != nil {
			return resp, err
		}
		if len(page) == 0 {
			resp.Complete = true
			return resp, nil
		}
		after = page[len(page)-1]
		items := make([]IncrementItem, len(page))
		leave := int64(-1)
		for i := range page {
			items[i] = IncrementItem{CounterID: &page[i].CounterID, Delta: &leave, Member: &uid}
		}
		for _, r := range core.increment(ctx, caller, items, nil, true) {
			switch {
			case r.Err == nil:
				if r.Response.Changed != nil && *r.Response.Changed {
					resp.Counters++
				}
			case errs.Is(r.Err, errs.NotFound):
				// A deleted counter: its purge deletes the document.
			default:
				return resp, r.Err // a retry goes on where this stopped
			}
		}
	}
	return resp, nil
}

package core

import (
	"context"
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
}

// erasePage is how many memberships one step of an erasure removes: one
// request of increments, each counter's commit in parallel.
const erasePage = 100

// EraseMember removes a user from every unique counter (account deletion,
// spam clean-up, GDPR erasure), for admins only: each counter down by
// exactly one, in the commit that deletes the member document, by the
// path every unlike takes. A call goes on while half its deadline is
// left. It is complete when a pass from the newest membership on reached
// the end within one call: a pass that began from a page token and
// reached the end starts over from the newest, which finds the likes made
// meanwhile. A call after completion changes nothing.
func (core *Core) EraseMember(ctx context.Context, caller Caller, body EraseMemberRequest) (EraseMemberResponse, error) {
	if !caller.Admin {
		return EraseMemberResponse{}, errs.New(errs.PermissionDenied, "eraseMember is for admins (your app's backend)")
	}
	uid := deref(body.UID)
	if counter.ValidateMemberID(uid) != nil {
		return EraseMemberResponse{}, errs.Invalid("uid", "must be a Firebase uid: 1 to 128 characters, no '/', not '.' or '..' or __…__")
	}
	after, err := erasureCursor(deref(body.PageToken), uid)
	if err != nil {
		return EraseMemberResponse{}, err
	}
	resp := EraseMemberResponse{UID: uid}
	stopAt := time.Now().Add(core.cfg.FirestoreDeadline / 2)
	if d, ok := ctx.Deadline(); ok {
		stopAt = time.Now().Add(time.Until(d) / 2)
	}
	fromTheTop := after.Path == ""
	for time.Now().Before(stopAt) {
		page, err := core.counters.Memberships(ctx, uid, after, erasePage)
		if err != nil {
			return resp, err
		}
		if len(page) == 0 {
			resp.Complete = fromTheTop // else the next call starts over, from the newest
			if !fromTheTop {
				resp.NextPageToken = ""
			}
			return resp, nil
		}
		after = page[len(page)-1]
		var items []IncrementItem
		leave := int64(-1)
		for i := range page {
			if page[i].CounterID == "" {
				resp.Skipped++ // an app's own members document
				continue
			}
			items = append(items, IncrementItem{CounterID: &page[i].CounterID, Delta: &leave, Member: &uid})
		}
		for _, r := range core.increment(ctx, caller, items, nil, true) {
			switch {
			case r.Err == nil:
				if r.Response.Changed != nil && *r.Response.Changed {
					resp.Counters++
				}
			case errs.Is(r.Err, errs.NotFound), errs.Is(r.Err, errs.InvalidArgument):
				resp.Skipped++ // deleted meanwhile (its purge removes it), or no longer unique
			default:
				return resp, r.Err // the same page token again goes on from there
			}
		}
		resp.NextPageToken = after.JoinedAt.UTC().Format(time.RFC3339Nano) + " " + after.Path
	}
	if resp.NextPageToken == "" && !fromTheTop {
		resp.NextPageToken = deref(body.PageToken) // no page in time: go on from the same place
	}
	return resp, nil
}

// erasureCursor reads a page token of eraseMember: the joined_at and path
// of the last membership a call went through, of the same user.
func erasureCursor(token, uid string) (counter.Membership, error) {
	if token == "" {
		return counter.Membership{}, nil
	}
	at, path, ok := strings.Cut(token, " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	parts := strings.Split(path, "/")
	if !ok || err != nil || len(parts)%2 != 0 || parts[len(parts)-1] != uid || slices.Contains(parts, "") {
		return counter.Membership{}, errs.Invalid("page_token", "is not a page token of eraseMember for this uid")
	}
	return counter.Membership{Path: path, JoinedAt: t}, nil
}

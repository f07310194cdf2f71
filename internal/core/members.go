package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// ListMembers pages through a unique counter's members: for its owner and
// admins (a counter of a kind has no owner: admins, an app's backend).
func (core *Core) ListMembers(ctx context.Context, caller Caller, body wire.ListMembersRequest) (wire.ListMembersResponse, error) {
	ctx = ledger.WithLabel(ctx, "read")
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return wire.ListMembersResponse{}, err
	}
	limit, err := limitOf(body.Limit, 20)
	if err != nil {
		return wire.ListMembersResponse{}, err
	}
	// A page token is the last uid of the previous page; any uid a member
	// document can have is one.
	after := deref(body.PageToken)
	if after != "" && counter.ValidateMemberID(after) != nil {
		return wire.ListMembersResponse{}, errs.Invalid("page_token", "is not a page token of listMembers")
	}
	c, err := core.manage(ctx, caller, id, core.counters.Live, ratelimit.List)
	if err != nil {
		return wire.ListMembersResponse{}, err
	}
	if !modes[c.Mode].members {
		return wire.ListMembersResponse{}, errs.Invalid("counter_id", "%q is not a unique counter: it has no members", id)
	}
	members, next, err := core.members.Members(ctx, id, after, limit)
	if err != nil {
		return wire.ListMembersResponse{}, err
	}
	resp := wire.ListMembersResponse{Members: make([]wire.ListedMember, len(members)), NextPageToken: next}
	for i, m := range members {
		resp.Members[i] = wire.ListedMember{UID: m.UID, JoinedAt: rfc3339Time(m.JoinedAt), Choice: m.Choice}
	}
	return resp, nil
}

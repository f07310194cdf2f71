package core

import (
	"context"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// ListMembersRequest is the input of listMembers.
type ListMembersRequest struct {
	CounterID *string `json:"counter_id"`
	Limit     *int64  `json:"limit"`
	PageToken *string `json:"page_token"`
}

// ListMembersResponse is a page of a unique counter's members ("who liked
// this post"), in uid order.
type ListMembersResponse struct {
	Members       []ListedMember `json:"members"`
	NextPageToken string         `json:"next_page_token,omitempty"`
}

// ListedMember is one member.
type ListedMember struct {
	UID      string `json:"uid"`
	JoinedAt string `json:"joined_at"`
	Choice   string `json:"choice,omitempty"` // of a choice counter's member
}

// ListMembers pages through a unique counter's members: for its owner and
// admins (a counter of a kind has no owner: admins, an app's backend).
func (core *Core) ListMembers(ctx context.Context, caller Caller, body ListMembersRequest) (ListMembersResponse, error) {
	ctx = ledger.WithLabel(ctx, "read")
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return ListMembersResponse{}, err
	}
	limit, err := limitOf(body.Limit, 20)
	if err != nil {
		return ListMembersResponse{}, err
	}
	// A page token is the last uid of the previous page; any uid a member
	// document can have is one.
	after := deref(body.PageToken)
	if after != "" && counter.ValidateMemberID(after) != nil {
		return ListMembersResponse{}, errs.Invalid("page_token", "is not a page token of listMembers")
	}
	c, err := core.manage(ctx, caller, id, core.counters.Live, ratelimit.List)
	if err != nil {
		return ListMembersResponse{}, err
	}
	if !modes[c.Mode].members {
		return ListMembersResponse{}, errs.Invalid("counter_id", "%q is not a unique counter: it has no members", id)
	}
	members, next, err := core.members.Members(ctx, id, after, limit)
	if err != nil {
		return ListMembersResponse{}, err
	}
	resp := ListMembersResponse{Members: make([]ListedMember, len(members)), NextPageToken: next}
	for i, m := range members {
		resp.Members[i] = ListedMember{UID: m.UID, JoinedAt: rfc3339Time(m.JoinedAt), Choice: m.Choice}
	}
	return resp, nil
}

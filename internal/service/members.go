package service

import (
	"context"
	"net/http"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/httpapi"
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
}

// listMembers pages through a unique counter's members: for its owner and
// admins (a counter of a kind has no owner: admins, an app's backend).
func (a *app) listMembers(ctx context.Context, req *httpapi.Request) (int, any, error) {
	ctx = firestoredb.WithLabel(ctx, "read")
	var body ListMembersRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return 0, nil, err
	}
	limit, err := limitOf(body.Limit, 20)
	if err != nil {
		return 0, nil, err
	}
	// A page token is the last uid of the previous page; any uid a member
	// document can have is one.
	after := deref(body.PageToken)
	if after != "" && firestoredb.ValidateMemberID(after) != nil {
		return 0, nil, errs.Invalid("page_token", "is not a page token of listMembers")
	}
	c, err := a.manage(ctx, req, id, a.store.Counters.Live, ratelimit.List)
	if err != nil {
		return 0, nil, err
	}
	if !c.Unique {
		return 0, nil, errs.Invalid("counter_id", "%q is not a unique counter: it has no members", id)
	}
	members, next, err := a.store.Counters.Members(ctx, id, after, limit)
	if err != nil {
		return 0, nil, err
	}
	resp := ListMembersResponse{Members: make([]ListedMember, len(members)), NextPageToken: next}
	for i, m := range members {
		resp.Members[i] = ListedMember{UID: m.UID, JoinedAt: rfc3339Time(m.JoinedAt)}
	}
	return http.StatusOK, resp, nil
}

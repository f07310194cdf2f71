package wire

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

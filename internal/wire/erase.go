package wire

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

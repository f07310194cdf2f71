package wire

// DeleteCounterRequest is the input of deleteCounter.
type DeleteCounterRequest struct {
	CounterID *string `json:"counter_id"`
}

// DeleteCounterResponse is the answer of deleteCounter.
type DeleteCounterResponse struct {
	CounterID string `json:"counter_id"`
	Deleted   bool   `json:"deleted"`
	// ReusableAfter is when the id may be created again: no late write of
	// the deleted counter can land after it.
	ReusableAfter string `json:"reusable_after"`
}

// ResetCounterRequest is the input of resetCounter.
type ResetCounterRequest struct {
	CounterID *string `json:"counter_id"`
	// Count is the value to set (default 0).
	Count *int64 `json:"count"`
}

// ResetCounterResponse is the answer of resetCounter: the counter held
// Count at AsOf; increments committed after AsOf count on top.
type ResetCounterResponse struct {
	CounterID string `json:"counter_id"`
	Count     int64  `json:"count"`
	AsOf      string `json:"as_of"`
}

// ListCountersRequest is the input of listCounters.
type ListCountersRequest struct {
	Limit     *int64  `json:"limit"`
	PageToken *string `json:"page_token"`
	// Owner filters by owner: the caller's own uid, or (admins) anyone's.
	Owner *string `json:"owner"`
}

// ListCountersResponse is a page of counters in id order.
type ListCountersResponse struct {
	Counters      []ListedCounter `json:"counters"`
	NextPageToken string          `json:"next_page_token,omitempty"`
}

// ListedCounter is one counter of a list: its roll-up, shard count and
// owner.
type ListedCounter struct {
	CounterID string `json:"counter_id"`
	Count     int64  `json:"count"`
	NumShards int    `json:"num_shards"`
	CreatedAt string `json:"created_at"`
	Owner     string `json:"owner"`
	Unique    bool   `json:"unique,omitempty"`
}

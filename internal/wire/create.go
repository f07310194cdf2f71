package wire

// CreateCounterRequest is the input of createCounter.
type CreateCounterRequest struct {
	CounterID      *string `json:"counter_id"`
	NumShards      *int64  `json:"num_shards"`
	FollowersCount *int64  `json:"followers_count"`
	PostType       *string `json:"post_type"`
	// Unique counters count distinct users (likes): see incrementCounter.
	Unique *bool `json:"unique"`
	// Ranked says whether topCounters shows it: an admin's choice (by
	// default yes); an end user's counter is not ranked.
	Ranked *bool `json:"ranked"`
}

// CreateCounterResponse is the answer of createCounter.
type CreateCounterResponse struct {
	CounterID string `json:"counter_id"`
	NumShards int    `json:"num_shards"`
	Unique    bool   `json:"unique,omitempty"`
}

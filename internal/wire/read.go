package wire

// GetCounterRequest is the input of getCounter (its query string, or a
// callable request's data).
type GetCounterRequest struct {
	CounterID   *string `json:"counter_id"`
	Consistency *string `json:"consistency"`
	// History asks for the counter's minute, hour or day buckets from From
	// to To (RFC 3339; To defaults to now, From to a span before To).
	History *string `json:"history"`
	From    *string `json:"from"`
	To      *string `json:"to"`
	// Window, of a distinct counter: last_7_days or last_30_days, its
	// distinct members over those days (today's included).
	Window *string `json:"window"`
}

// GetCounterResponse is the answer of getCounter.
type GetCounterResponse struct {
	CounterID   string `json:"counter_id"`
	Count       int64  `json:"count"`
	NumShards   int    `json:"num_shards"`
	Consistency string `json:"consistency"`
	// AsOf is the time the count is exact at (RFC 3339, UTC).
	AsOf   string `json:"as_of"`
	Unique bool   `json:"unique,omitempty"`
	// Member tells a signed-in caller whether they are a member of a
	// unique counter, and Choice their choice on a choice counter.
	Member *bool   `json:"member,omitempty"`
	Choice *string `json:"choice,omitzero"`
	// Counts are a choice counter's members by choice, as exact as Count.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Estimate: Count is a distinct counter's estimate of its distinct
	// members, with its relative StandardError.
	Estimate      bool    `json:"estimate,omitempty"`
	StandardError float64 `json:"standard_error,omitempty"`
	// Reshard is the last change of the shard count (eventual reads).
	Reshard *ReshardStatus `json:"reshard,omitempty"`
	// Window and From, with window: the days whose distinct members
	// Count estimates, from From on.
	Window string `json:"window,omitempty"`
	From   string `json:"from,omitempty"`
	// History is the count of each bucket asked for, oldest first; a
	// bucket with nothing counted is 0.
	History []HistoryPoint `json:"history,omitempty"`
}

// HistoryPoint is one bucket of a counter's history.
type HistoryPoint struct {
	Start string `json:"start"`
	Count int64  `json:"count"`
	// Counts, of a choice counter: each choice's change in the bucket.
	Counts map[string]int64 `json:"counts,omitempty"`
}

// ReshardStatus describes the last change of a counter's shard count.
type ReshardStatus struct {
	From       int    `json:"from"`
	To         int    `json:"to"`
	At         string `json:"at"`
	Merging    bool   `json:"merging"`
	MergeUntil string `json:"merge_until,omitempty"`
	MergedAt   string `json:"merged_at,omitempty"`
}

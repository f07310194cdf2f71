package wire

// ReshardCounterRequest is the input of reshardCounter.
type ReshardCounterRequest struct {
	CounterID *string `json:"counter_id"`
	NumShards *int64  `json:"num_shards"`
}

// ReshardCounterResponse is the answer of reshardCounter.
type ReshardCounterResponse struct {
	CounterID         string `json:"counter_id"`
	NumShards         int    `json:"num_shards"`
	PreviousNumShards int    `json:"previous_num_shards"`
	// MergeUntil is set when shrinking: shards >= num_shards keep being
	// merged until then, when no instance can still write to them.
	MergeUntil string `json:"merge_until,omitempty"`
	// ShardsMerged is how many old shards this request already merged.
	ShardsMerged int `json:"shards_merged"`
}

package wire

// UpdateCounterRequest is the input of updateCounter: the settings to
// change.
type UpdateCounterRequest struct {
	CounterID *string `json:"counter_id"`
	// Ranked says whether topCounters shows the counter.
	Ranked *bool `json:"ranked"`
}

// UpdateCounterResponse is the answer of updateCounter.
type UpdateCounterResponse struct {
	CounterID string `json:"counter_id"`
	Ranked    bool   `json:"ranked"`
}

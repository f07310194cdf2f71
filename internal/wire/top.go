package wire

// TopCountersRequest is the input of topCounters.
type TopCountersRequest struct {
	// Window is minute, hour, day (the current bucket, or the last
	// complete one with Previous), last_hour or last_day (the last 60
	// minutes or 24 hours, rolling) or all (by total).
	Window   *string `json:"window"`
	Limit    *int64  `json:"limit"`
	Previous *bool   `json:"previous"`
	// Kind ranks the counters of one kind (COUNTER_KINDS) only, and
	// Choice (of a choice kind) by the count of that choice.
	Kind   *string `json:"kind"`
	Choice *string `json:"choice"`
}

// TopCountersResponse ranks counters, highest count first, ties by id.
type TopCountersResponse struct {
	Window string `json:"window"`
	Kind   string `json:"kind,omitempty"`
	Choice string `json:"choice,omitempty"`
	// Start is the start of the window ranked (absent for all).
	Start    string          `json:"start,omitempty"`
	Counters []RankedCounter `json:"counters"`
	// Exact, for a rolling window: whether no other counter can rank
	// among these (almost always; see docs/guides/trending.md). When
	// false, Counters holds only those sure of their place, first. For
	// rising: whether no counter left out can score above the last one
	// listed; when false, Counters are the best of those scored.
	Exact *bool `json:"exact,omitempty"`
	// Rising names the parameters of window=rising.
	Rising *RisingParameters `json:"rising,omitempty"`
}

// RisingParameters are what a rising ranking scored with
// (docs/design/windows.md): score = (last hour − λ) / √(λ + prior), λ the
// mean per hour of the baseline hours before.
type RisingParameters struct {
	Prior         float64 `json:"prior"`
	BaselineHours int     `json:"baseline_hours"`
	// Candidates is how many counters were scored: those a ranking of the
	// last hour reads, and the first by rise of the current and the
	// previous hour.
	Candidates int `json:"candidates"`
}

// RankedCounter is one counter of a ranking: of a rising one, Count is
// its last 60 minutes', Baseline its mean per hour before, and Score how
// far above it that is.
type RankedCounter struct {
	CounterID string   `json:"counter_id"`
	Count     int64    `json:"count"`
	Baseline  *float64 `json:"baseline_per_hour,omitempty"`
	Score     *float64 `json:"score,omitempty"`
}

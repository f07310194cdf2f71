package wire

import "github.com/go-json-experiment/json/jsontext"

// MaxCountersPerRead is the most counters one getCounters reads: a page
// of a feed, the size feeds at scale are answered in.
const MaxCountersPerRead = 200

// GetCountersRequest is the input of getCounters: a page's counters, by
// id, or as every kind of every key, key by key, each kind in the order
// given ("likes:p1", "views:p1", "likes:p2", …).
type GetCountersRequest struct {
	CounterIDs Names `json:"counter_ids"`
	Keys       Names `json:"keys"`
	Kinds      Names `json:"kinds"`
}

// Names are the strings of one list of a request, decoded one at a time:
// the one past MaxCountersPerRead is refused as soon as it is reached.
type Names []string

// UnmarshalJSONFrom decodes an array of strings, at most
// MaxCountersPerRead.
func (n *Names) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return decodeAtMost(dec, MaxCountersPerRead, "counter_ids, keys and kinds each", (*[]string)(n))
}

// CounterRow is one counter of a getCounters answer: as an eventual
// getCounter answers it (the roll-up's count, as of as_of), with what its
// mode tells the reader (modes.go); a row that failed has no count.
type CounterRow struct {
	CounterID string `json:"counter_id"`
	Count     *int64 `json:"count,omitempty"`
	AsOf      string `json:"as_of,omitempty"`
	// Member tells a signed-in reader whether they are a member (of a
	// counter of members), and Choice their choice ("": none).
	Member *bool            `json:"member,omitempty"`
	Choice *string          `json:"choice,omitzero"`
	Counts map[string]int64 `json:"counts,omitempty"`
	// Estimate: Count is a distinct counter's estimate.
	Estimate bool `json:"estimate,omitempty"`
}

package wire

import "github.com/shardcount/shardcount/internal/instruments"

// RecordInstrumentsRequest is the input of recordInstruments.
type RecordInstrumentsRequest struct {
	Instruments []instruments.Input `json:"instruments"`
}

// RecordInstrumentsResponse lists the new documents' ids in request order.
type RecordInstrumentsResponse struct {
	IDs []string `json:"ids"`
}

// QueryInstrumentsRequest is the input of queryInstruments (its query
// string, or a callable request's data).
type QueryInstrumentsRequest struct {
	Field     *string `json:"field"`
	Value     *string `json:"value"`
	Limit     *int    `json:"limit"`
	PageToken *string `json:"page_token"`
}

// QueryInstrumentsResponse is a page of instruments, newest first.
type QueryInstrumentsResponse struct {
	Instruments   []instruments.Instrument `json:"instruments"`
	NextPageToken string                   `json:"next_page_token,omitempty"`
}

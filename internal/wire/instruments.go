package wire

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shardcount/shardcount/internal/instruments"
)

// RecordInstrumentsRequest is the input of recordInstruments.
type RecordInstrumentsRequest struct {
	Instruments Inputs `json:"instruments"`
}

// Inputs are the instruments of one request, decoded one at a time: the
// one past instruments.MaxBatch is refused as soon as it is reached (a
// megabyte of {} decoded whole took 69 MB).
type Inputs []instruments.Input

// UnmarshalJSONFrom decodes an array of instruments, at most
// instruments.MaxBatch.
func (in *Inputs) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return decodeAtMost(dec, instruments.MaxBatch, "instruments", (*[]instruments.Input)(in))
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

// Package wire is the functions' contract with their callers: each
// request and answer as JSON carries it, declared once. internal/core
// takes and answers them; the Go client's answer types, the web client's
// types (client/web/src/wire.ts, generated) and the API reference are
// held to them by tests (internal/service's and client's wire_test.go).
// A list's and a page's answers, which carry an error per item as HTTP
// answers it, are internal/service's.
package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/increment"
)

// IncrementItem is one increment: a delta (default 1) or an action_type
// ("increment", "decrement"), and an optional idempotency key.
type IncrementItem struct {
	CounterID      *string `json:"counter_id"`
	Delta          *int64  `json:"delta"`
	ActionType     *string `json:"action_type"`
	IdempotencyKey *string `json:"idempotency_key"`
	// Member, from an admin on a unique counter: the user the increment
	// adds (+1) or removes (−1), instead of the caller.
	Member *string `json:"member"`
	// Choice, on a choice counter: the caller's choice, in place of any
	// other; "" removes it.
	Choice *string `json:"choice"`
}

// IncrementCounterRequest is the input of incrementCounter: one increment,
// or several in Increments.
type IncrementCounterRequest struct {
	IncrementItem `json:",inline"`
	Increments    Items `json:"increments"`
}

// Items are the increments of one request, decoded one at a time: the
// item past MaxIncrementsPerRequest is refused as soon as it is reached,
// before it is read.
type Items []IncrementItem

// UnmarshalJSONFrom decodes an array of increments, at most
// MaxIncrementsPerRequest.
func (it *Items) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return decodeAtMost(dec, MaxIncrementsPerRequest, "increments", (*[]IncrementItem)(it))
}

// decodeAtMost decodes a JSON array of at most most items into out (an
// empty one too): the item past most is refused as soon as it is
// reached, before it is read, so a list costs its bound at most.
func decodeAtMost[T any](dec *jsontext.Decoder, most int, field string, out *[]T) error {
	if dec.PeekKind() != '[' {
		return json.SkipFunc // the decoder's own error, naming the field
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	items := []T{}
	for dec.PeekKind() != ']' {
		if len(items) == most {
			return errs.Invalid(field, "must hold 1 to %d items, got more", most)
		}
		var item T
		if err := json.UnmarshalDecode(dec, &item); err != nil {
			return err
		}
		items = append(items, item)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*out = items
	return nil
}

// IncrementCounterResponse answers one increment.
type IncrementCounterResponse struct {
	CounterID string `json:"counter_id"`
	Delta     int64  `json:"delta"`
	// Shard is the shard written; absent when none was (a unique
	// counter's increment that changed nothing).
	Shard *int `json:"shard,omitempty"`
	// Replayed is true when the idempotency key had been used: nothing was
	// applied and this is the first answer again.
	Replayed bool `json:"replayed,omitempty"`
	// Member and Changed answer an increment of a unique counter: whether
	// the caller is a member now, and whether this request made it so.
	Member  *bool `json:"member,omitempty"`
	Changed *bool `json:"changed,omitempty"`
	// Choice and Previous answer a choice counter's: the caller's choice
	// now, and before ("": none).
	Choice   *string `json:"choice,omitzero"`
	Previous *string `json:"previous,omitzero"`
}

// MaxIncrementsPerRequest is the most items one request's increments may
// hold.
const MaxIncrementsPerRequest = increment.MaxBatch

package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/groupcommit"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// IncrementItem is one increment: a delta (default 1) or seed 004's
// action_type, and an optional idempotency key.
type IncrementItem struct {
	CounterID      *string `json:"counter_id"`
	Delta          *int64  `json:"delta"`
	ActionType     *string `json:"action_type"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// IncrementCounterRequest is the input of incrementCounter: one increment,
// or several in Increments.
type IncrementCounterRequest struct {
	IncrementItem `json:",inline"`
	Increments    []IncrementItem `json:"increments"`
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
}

// IncrementListResponse answers a request of several increments, one
// result per item, in order.
type IncrementListResponse struct {
	Results []IncrementItemResult `json:"results"`
}

// IncrementItemResult is one item's outcome: its status (200, or the
// status the item alone would have had) and its answer or error.
type IncrementItemResult struct {
	Status int `json:"status"`
	*IncrementCounterResponse
	Error *httpapi.ErrorDetail `json:"error,omitempty"`
}

// MaxIncrementsPerRequest is the most items one request's increments may
// hold.
const MaxIncrementsPerRequest = 500

// maxKeyLength bounds an idempotency key.
const maxKeyLength = 255

// validate checks an increment on its own; key is the idempotency key,
// from the item or the request's Idempotency-Key header.
func (it IncrementItem) validate(headerKey *string) (string, firestoredb.IncrementOp, error) {
	var op firestoredb.IncrementOp
	id, err := requiredCounterID(it.CounterID)
	if err != nil {
		return "", op, err
	}
	switch {
	case it.Delta != nil && it.ActionType != nil:
		return "", op, errs.Invalid("action_type", "and delta are exclusive: send one of them")
	case it.ActionType != nil:
		d, err := counter.DeltaFor(*it.ActionType)
		if err != nil {
			return "", op, err
		}
		op.Delta = d
	case it.Delta != nil:
		if err := counter.ValidateDelta(*it.Delta); err != nil {
			return "", op, err
		}
		op.Delta = *it.Delta
	default:
		op.Delta = 1
	}
	if err := validateKey("idempotency_key", it.IdempotencyKey); err != nil {
		return "", op, err
	}
	op.Key = deref(it.IdempotencyKey)
	if headerKey != nil {
		if op.Key != "" && op.Key != *headerKey {
			return "", op, errs.Invalid("idempotency_key", "and the Idempotency-Key header differ: send the key once")
		}
		op.Key = *headerKey
	}
	return id, op, nil
}

// validateKey checks an idempotency key that was given.
func validateKey(field string, key *string) error {
	switch {
	case key == nil:
		return nil
	case *key == "":
		return errs.Invalid(field, "must not be empty")
	case len(*key) > maxKeyLength:
		return errs.Invalid(field, "must be at most %d characters", maxKeyLength)
	}
	for i := 0; i < len(*key); i++ {
		if c := (*key)[i]; c < 0x21 || c > 0x7e {
			return errs.Invalid(field, "must be printable ASCII without spaces")
		}
	}
	return nil
}

// headerKey returns the request's Idempotency-Key header, if it was sent:
// once, and valid.
func headerKey(req *httpapi.Request) (*string, error) {
	values := req.HTTP.Header.Values("Idempotency-Key")
	switch len(values) {
	case 0:
		return nil, nil
	case 1:
		return &values[0], validateKey("Idempotency-Key", &values[0])
	}
	return nil, errs.Invalid("Idempotency-Key", "must be sent once, not %d times", len(values))
}

// authorize checks what the caller may do to counter c with op, and sets
// the op's user: a unique counter takes +1 or −1 from an identified caller
// only, a plain one a delta within the caller's role.
func (a *app) authorize(req *httpapi.Request, c counter.Counter, op *firestoredb.IncrementOp) error {
	op.User = req.User
	if !c.Unique {
		return a.mayAdd(req, c, op.Delta)
	}
	if op.Delta != 1 && op.Delta != -1 {
		return errs.Invalid("delta", "must be 1 or -1 on unique counter %q: +1 adds you, -1 removes you", c.ID)
	}
	return firestoredb.ValidateMemberID(req.User)
}

func (a *app) incrementCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body IncrementCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	hk, err := headerKey(req)
	if err != nil {
		return 0, nil, err
	}
	if body.Increments != nil {
		return a.incrementList(ctx, req, body, hk)
	}
	id, op, err := body.IncrementItem.validate(hk)
	if err != nil {
		return 0, nil, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if err := a.allow(ctx, req, ratelimit.Increment, 1); err != nil {
		return 0, nil, err
	}
	c, err := a.store.Counters.LiveOrNewCached(ctx, id)
	if err == nil {
		err = a.payForFirstUse(ctx, req, c)
	}
	if err != nil {
		return 0, nil, err
	}
	if err := a.authorize(req, c, &op); err != nil {
		return 0, nil, err
	}
	op.Ledger = ledger.From(ctx)
	results, err := a.increments.Do(ctx, id, []firestoredb.IncrementOp{op})
	if err != nil {
		err = unknownOutcome(ctx, err)
		countChange(c.Unique, firestoredb.IncrementResult{}, err)
		return 0, nil, err
	}
	r := results[0]
	countChange(c.Unique, r, nil)
	if r.Err != nil {
		return 0, nil, r.Err
	}
	if r.Replayed {
		req.SetHeader("Idempotent-Replayed", "true")
	}
	return http.StatusOK, incrementResponse(id, c, r), nil
}

func incrementResponse(id string, c counter.Counter, r firestoredb.IncrementResult) *IncrementCounterResponse {
	resp := &IncrementCounterResponse{CounterID: id, Delta: r.Delta, Replayed: r.Replayed}
	if r.Shard >= 0 {
		resp.Shard = &r.Shard
	}
	if c.Unique {
		resp.Member, resp.Changed = &r.Member, &r.Changed
	}
	return resp
}

// unknownOutcome is the answer to a request whose context ended while its
// commit was queued or in flight: it may or may not have been applied. A
// flush that panicked (a bug) is INTERNAL instead, its stack logged.
func unknownOutcome(ctx context.Context, err error) error {
	if pe, ok := errors.AsType[*groupcommit.PanicError](err); ok {
		logging.FromContext(ctx).Error("panic", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return errs.Wrap(errs.Internal, err, "internal error")
	}
	return errs.Retryable(err, time.Second, "the request ended before its commit was known; retry with the same idempotency key")
}

// incrementList applies several increments: every valid item of one
// counter in one commit (atomically, when they fit in one: up to
// GROUP_COMMIT_MAX_BATCH items), counters independently; each item gets
// its own result.
func (a *app) incrementList(ctx context.Context, req *httpapi.Request, body IncrementCounterRequest, hk *string) (int, any, error) {
	switch {
	case body.CounterID != nil || body.Delta != nil || body.ActionType != nil || body.IdempotencyKey != nil:
		return 0, nil, errs.Invalid("increments", "cannot be combined with counter_id, delta, action_type or idempotency_key: put them in the items")
	case hk != nil:
		return 0, nil, errs.Invalid("Idempotency-Key", "applies to a single increment; give each item of increments its idempotency_key")
	case len(body.Increments) == 0 || len(body.Increments) > MaxIncrementsPerRequest:
		return 0, nil, errs.Invalid("increments", "must hold 1 to %d items, got %d", MaxIncrementsPerRequest, len(body.Increments))
	}
	results := make([]IncrementItemResult, len(body.Increments))
	fail := func(i int, err error) {
		d := httpapi.ErrorDetailOf(err)
		results[i] = IncrementItemResult{Status: httpapi.Status(err), Error: &d}
		httpapi.CountRefusal(ctx, req.Function, results[i].Status) // an item refused counts as a request would
	}
	var order []string
	groups := map[string][]int{}
	counters := map[string]counter.Counter{}
	ops := make([]firestoredb.IncrementOp, len(body.Increments))
	for i, item := range body.Increments {
		// Each item spends its budget before anything is read for it.
		id, op, err := item.validate(nil)
		if err == nil {
			err = a.allow(ctx, req, ratelimit.Increment, 1)
		}
		if err == nil {
			c, ok := counters[id]
			if !ok {
				if c, err = a.store.Counters.LiveOrNewCached(ctx, id); err == nil {
					if err = a.payForFirstUse(ctx, req, c); err == nil {
						counters[id] = c
					}
				}
			}
			if err == nil {
				err = a.authorize(req, c, &op)
			}
		}
		if err != nil {
			fail(i, errs.Under(fmt.Sprintf("increments[%d].", i), err))
			continue
		}
		op.Ledger = ledger.From(ctx)
		ops[i] = op
		if groups[id] == nil {
			order = append(order, id)
		}
		groups[id] = append(groups[id], i)
	}
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Go(func() {
			idx := groups[id]
			mine := make([]firestoredb.IncrementOp, len(idx))
			for j, i := range idx {
				mine[j] = ops[i]
			}
			rs, err := a.increments.Do(ctx, id, mine)
			if err != nil {
				err = unknownOutcome(ctx, err)
			}
			for j, i := range idx {
				var r firestoredb.IncrementResult
				if err == nil {
					r = rs[j]
				}
				countChange(counters[id].Unique, r, err)
				switch {
				case err != nil:
					fail(i, err)
				case rs[j].Err != nil:
					fail(i, errs.Under(fmt.Sprintf("increments[%d].", i), rs[j].Err))
				default:
					results[i] = IncrementItemResult{Status: http.StatusOK, IncrementCounterResponse: incrementResponse(id, counters[id], rs[j])}
				}
			}
		})
	}
	wg.Wait()
	return http.StatusOK, IncrementListResponse{Results: results}, nil
}

// commitIncrements is the group commit's flush: one counter's queued
// increments in one commit, under the function's deadline but no caller's
// context (callers may be gone; the others still need the commit).
func (a *app) commitIncrements(ctx context.Context, id string, ops []firestoredb.IncrementOp) []firestoredb.IncrementResult {
	ctx, cancel := context.WithTimeout(firestoredb.WithLabel(ctx, "increment"), a.cfg.FirestoreDeadline)
	defer cancel()
	return a.store.Increments.Apply(ctx, id, ops)
}

// firstUseReads is what a first use reads beyond an increment: its
// commit finds the counter's document absent, and keys_in reads the app's
// document (not what createCounter's token pays for, a purge).
const firstUseReads = 2

// payForFirstUse spends the caller's create budget when its increment
// would create counter c (a counter of a kind nobody used yet): an end
// user mints new counters, ranked ones among them, at the pace of
// createCounter's budget, not of increments. Of a kind with keys_in, an
// end user mints only counters of the app's documents that exist.
func (a *app) payForFirstUse(ctx context.Context, req *httpapi.Request, c counter.Counter) error {
	if !c.Version.IsZero() {
		return nil
	}
	if err := a.allowPaying(ctx, req, ratelimit.Create, 1, firstUseReads); err != nil {
		return err
	}
	kind, ok := a.cfg.Kinds.Of(c.ID)
	if !ok || kind.KeysIn == "" || req.Admin {
		return nil
	}
	path, ok := kind.KeyDocument(c.ID)
	if ok {
		var err error
		if ok, err = a.store.Counters.AppDocumentExists(ctx, path); err != nil {
			return err
		}
	}
	if !ok {
		return errs.New(errs.NotFound, "counter %s does not exist: a counter of kind %s comes into being for a document of %s, and there is none with its key",
			c.ID, kind.Name, kind.KeysIn)
	}
	return nil
}

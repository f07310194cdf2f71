package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/groupcommit"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// Incremented is the outcome of one item of a list: its answer, or the
// error it alone would have had.
type Incremented struct {
	Response *wire.IncrementCounterResponse
	Err      error
}

// IncrementCounter applies one increment, body's own, or each item of
// body.Increments; headerKey is the request's Idempotency-Key, when sent.
// A list answers one outcome per item, in order: every valid item of one
// counter in one commit (atomically, up to GROUP_COMMIT_MAX_BATCH items; a
// distinct counter's viewers known counted answer without), counters apart.
func (core *Core) IncrementCounter(ctx context.Context, caller Caller, body wire.IncrementCounterRequest, headerKey *string) (*wire.IncrementCounterResponse, []Incremented, error) {
	if body.Increments == nil {
		out := core.increment(ctx, caller, []wire.IncrementItem{body.IncrementItem}, headerKey, oneItem)
		return out[0].Response, nil, out[0].Err
	}
	switch {
	case body.CounterID != nil || body.Delta != nil || body.ActionType != nil || body.IdempotencyKey != nil || body.Member != nil || body.Choice != nil:
		return nil, nil, errs.Invalid("increments", "cannot be combined with counter_id, delta, action_type, idempotency_key, member or choice: put them in the items")
	case headerKey != nil:
		return nil, nil, errs.Invalid("Idempotency-Key", "applies to a single increment; give each item of increments its idempotency_key")
	case len(body.Increments) == 0 || len(body.Increments) > wire.MaxIncrementsPerRequest:
		return nil, nil, errs.Invalid("increments", "must hold 1 to %d items, got %d", wire.MaxIncrementsPerRequest, len(body.Increments))
	}
	return nil, core.increment(ctx, caller, body.Increments, nil, aList), nil
}

// source is where a request's items come from: what an item's error
// names, and whether each plays last in its commit.
type source int

const (
	oneItem   source = iota // a request's own increment
	aList                   // a request's increments: an item's error names it
	anErasure               // eraseMember's: each plays last in its commit (increment.Op.Erase)
)

// authorized is a counter as one request read it, and until when that
// read may be used.
type authorized struct {
	c     counter.Counter
	fresh time.Time
}

// increment is the one path of every increment: each item is validated,
// spends its budget, has its counter read (once per counter and request),
// pays for a first use, is authorized on that counter, and is queued with
// it; then each counter's items are committed together. In a list, an
// item's error names it (increments[i].).
func (core *Core) increment(ctx context.Context, caller Caller, items []wire.IncrementItem, headerKey *string, from source) []Incremented {
	list := from != oneItem
	out := make([]Incremented, len(items))
	under := func(i int, err error) error {
		if list {
			return errs.Under(fmt.Sprintf("increments[%d].", i), err)
		}
		return err
	}
	read := map[string]authorized{}
	groups := map[string][]int{}
	var order []string
	ops := make([]increment.Op, len(items))
	for i, item := range items {
		id, op, err := validateItem(item, headerKey)
		if err == nil && caller.OneUse && i > 0 {
			err = &errs.Error{Code: errs.PermissionDenied, Field: "X-Firebase-AppCheck",
				Message: "a limited-use App Check token pays for one increment (APP_CHECK_CONSUME): send each item with a token of its own"}
		}
		if err == nil {
			if !list {
				logging.Annotate(ctx, "counter_id", id)
			}
			// Each item spends its budget before anything is read for it.
			err = core.allow(ctx, caller, ratelimit.Increment, 1)
		}
		if err == nil {
			op.Erase = from == anErasure
			op, err = core.authorize(ctx, caller, id, op, item, read)
		}
		if err != nil {
			out[i].Err = under(i, err)
			continue
		}
		ops[i] = op
		if groups[id] == nil {
			order = append(order, id)
		}
		groups[id] = append(groups[id], i)
	}
	commit := func(id string) {
		idx := groups[id]
		mine := make([]increment.Op, len(idx))
		for j, i := range idx {
			mine[j] = ops[i]
		}
		rs, err := core.batcher.Do(ctx, id, mine)
		if err != nil {
			err = unknownOutcome(ctx, err)
		}
		c := read[id].c
		for j, i := range idx {
			var r increment.Result
			if err == nil {
				r = rs[j]
			}
			core.metrics.CountIncrement(c.Mode.Members(), r, err)
			ledger.From(ctx).Book(r.Reads) // its share of what the commit read
			switch {
			case err != nil:
				out[i].Err = err
			case r.Err != nil:
				out[i].Err = under(i, r.Err)
			default:
				out[i].Response = incrementResponse(c, r)
			}
		}
	}
	if len(order) == 1 {
		commit(order[0])
		return out
	}
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Go(func() { commit(id) })
	}
	wg.Wait()
	return out
}

// authorize reads counter id (once per request), checks what the caller
// may do to it with op, as its mode takes it (modes.go), and only then
// pays for its first use. It returns op, with its user and its counter.
func (core *Core) authorize(ctx context.Context, caller Caller, id string, op increment.Op, item wire.IncrementItem, read map[string]authorized) (increment.Op, error) {
	member := item.Member
	if member != nil && !caller.Admin {
		return op, &errs.Error{Code: errs.PermissionDenied, Field: "member", Message: "only admins (your app's backend) act for a member; an end user's increment counts themselves"}
	}
	a, ok := read[id]
	if !ok {
		c, fresh, err := core.counters.LiveOrNewCached(ctx, id)
		if err != nil {
			return op, err
		}
		a = authorized{c: c, fresh: fresh}
	}
	op.User, op.Counter, op.Fresh = caller.User, a.c, a.fresh
	if op.Erase && !modes[a.c.Mode].members { // a member document left of a kind made plain or distinct since
		return op, errs.Invalid("member", "%q keeps no members", id)
	}
	if err := modes[a.c.Mode].take(core, caller, a.c, &op, item); err != nil {
		return op, err // before a first use is paid for: a choice it lacks creates nothing
	}
	if !ok {
		if err := core.payForFirstUse(ctx, caller, a.c); err != nil {
			return op, err
		}
		read[id] = a
	}
	return op, nil
}

// validateItem checks an increment on its own; headerKey is the request's
// Idempotency-Key header, when sent.
func validateItem(it wire.IncrementItem, headerKey *string) (string, increment.Op, error) {
	var op increment.Op
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
	if err := increment.ValidateKey("idempotency_key", it.IdempotencyKey); err != nil {
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

func incrementResponse(c counter.Counter, r increment.Result) *wire.IncrementCounterResponse {
	resp := &wire.IncrementCounterResponse{CounterID: c.ID, Delta: r.Delta, Replayed: r.Replayed}
	if r.Shard >= 0 {
		resp.Shard = &r.Shard
	}
	modes[c.Mode].answer(resp, r)
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

// firstUseReads is what a first use reads beyond an increment: its
// commit finds the counter's document absent, and keys_in reads the app's
// document (not what createCounter's token pays for, a purge).
const firstUseReads = 2

// payForFirstUse spends the caller's create budget when its increment
// would create counter c (a counter of a kind nobody used yet): an end
// user mints new counters, ranked ones among them, at the pace of
// createCounter's budget, not of increments. Of a kind with keys_in, an
// end user mints only counters of the app's documents that exist.
func (core *Core) payForFirstUse(ctx context.Context, caller Caller, c counter.Counter) error {
	if !c.Version.IsZero() {
		return nil
	}
	if err := core.allowPaying(ctx, caller, ratelimit.Create, 1, firstUseReads); err != nil {
		return err
	}
	kind, ok := core.cfg.Kinds.Of(c.ID)
	if !ok || kind.KeysIn == "" || caller.Admin {
		return nil
	}
	path, ok := kind.KeyDocument(c.ID)
	if ok {
		var err error
		if ok, err = core.apps.Exists(ctx, path); err != nil {
			return err
		}
	}
	if !ok {
		return errs.New(errs.NotFound, "counter %s does not exist: a counter of kind %s comes into being for a document of %s, and there is none with its key",
			c.ID, kind.Name, kind.KeysIn)
	}
	return nil
}

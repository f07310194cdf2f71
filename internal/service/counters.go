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
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// CreateCounterRequest is the input of createCounter.
type CreateCounterRequest struct {
	CounterID      *string `json:"counter_id"`
	NumShards      *int64  `json:"num_shards"`
	FollowersCount *int64  `json:"followers_count"`
	PostType       *string `json:"post_type"`
}

// CreateCounterResponse is the answer of createCounter.
type CreateCounterResponse struct {
	CounterID string `json:"counter_id"`
	NumShards int    `json:"num_shards"`
}

// counterToCreate validates a createCounter body and resolves the id and
// shard count to use.
func (b CreateCounterRequest) counterToCreate() (id string, shards int, err error) {
	if b.CounterID != nil {
		if err := counter.ValidateID(*b.CounterID); err != nil {
			return "", 0, err
		}
		id = *b.CounterID
	} else {
		id = counter.NewID()
	}
	postType, err := counter.ParsePostType(deref(b.PostType))
	if err != nil {
		return "", 0, err
	}
	if b.FollowersCount != nil {
		if err := counter.ValidateFollowers(*b.FollowersCount); err != nil {
			return "", 0, err
		}
	}
	switch {
	case b.NumShards != nil:
		if err := counter.ValidateShards(*b.NumShards); err != nil {
			return "", 0, err
		}
		shards = int(*b.NumShards)
	case b.FollowersCount != nil:
		shards = counter.ShardsFor(*b.FollowersCount, postType)
	default:
		shards = counter.DefaultShards
	}
	return id, shards, nil
}

func (a *app) createCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body CreateCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	id, shards, err := body.counterToCreate()
	if err != nil {
		return 0, nil, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if err := a.allow(req, ratelimit.Create, 1); err != nil {
		return 0, nil, err
	}
	c, err := a.counters.Create(ctx, id, shards)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, CreateCounterResponse{CounterID: c.ID, NumShards: c.NumShards}, nil
}

// IncrementItem is one increment: a delta (default 1) or seed 004's
// action_type, and an optional idempotency key.
type IncrementItem struct {
	CounterID      *string `json:"counter_id"`
	Delta          *int64  `json:"delta"`
	ActionType     *string `json:"action_type"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// IncrementCounterRequest is the input of incrementCounter: one increment,
// or a batch of them in Increments.
type IncrementCounterRequest struct {
	IncrementItem `json:",inline"`
	Increments    []IncrementItem `json:"increments"`
}

// IncrementCounterResponse answers one increment.
type IncrementCounterResponse struct {
	CounterID string `json:"counter_id"`
	Delta     int64  `json:"delta"`
	Shard     int    `json:"shard"`
	// Replayed is true when the idempotency key had been used: nothing was
	// applied and this is the first answer again.
	Replayed bool `json:"replayed,omitempty"`
}

// IncrementBatchResponse answers a batch, one result per item, in order.
type IncrementBatchResponse struct {
	Results []IncrementBatchResult `json:"results"`
}

// IncrementBatchResult is one item's outcome: its status (200, or the
// status the item alone would have had) and its answer or error.
type IncrementBatchResult struct {
	Status int `json:"status"`
	*IncrementCounterResponse
	Error *httpapi.ErrorDetail `json:"error,omitempty"`
}

// MaxBatch is the most increments one batch request may hold.
const MaxBatch = 500

// maxKeyLength bounds an idempotency key.
const maxKeyLength = 255

// validate checks an increment; headerKey is the Idempotency-Key header,
// if any.
func (it IncrementItem) validate(headerKey string) (string, firestoredb.IncrementOp, error) {
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
	key := deref(it.IdempotencyKey)
	switch {
	case headerKey != "" && key != "" && headerKey != key:
		return "", op, errs.Invalid("idempotency_key", "and the Idempotency-Key header differ: send the key once")
	case headerKey != "":
		key = headerKey
	}
	if err := validateKey("idempotency_key", key, it.IdempotencyKey != nil); err != nil {
		return "", op, err
	}
	op.Key = key
	return id, op, nil
}

func validateKey(field, key string, given bool) error {
	switch {
	case given && key == "":
		return errs.Invalid(field, "must not be empty")
	case len(key) > maxKeyLength:
		return errs.Invalid(field, "must be at most %d characters", maxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return errs.Invalid(field, "must be printable ASCII without spaces")
		}
	}
	return nil
}

func (a *app) incrementCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body IncrementCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	headerKey := req.Header("Idempotency-Key")
	if body.Increments != nil {
		return a.incrementBatch(ctx, req, body, headerKey)
	}
	if err := validateKey("Idempotency-Key", headerKey, false); err != nil {
		return 0, nil, err
	}
	id, op, err := body.IncrementItem.validate(headerKey)
	if err != nil {
		return 0, nil, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if err := a.allow(req, ratelimit.Increment, 1); err != nil {
		return 0, nil, err
	}
	op.User = req.User
	results, err := a.increments.Do(ctx, id, []firestoredb.IncrementOp{op})
	if err != nil {
		return 0, nil, unknownOutcome(ctx, err)
	}
	r := results[0]
	if r.Err != nil {
		return 0, nil, r.Err
	}
	if r.Replayed {
		req.SetHeader("Idempotent-Replayed", "true")
	}
	return http.StatusOK, IncrementCounterResponse{CounterID: id, Delta: r.Delta, Shard: r.Shard, Replayed: r.Replayed}, nil
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

// incrementBatch applies a batch: every valid item of one counter in one
// commit (atomically, when they fit in one: up to GROUP_COMMIT_MAX_BATCH
// items), counters independently; each item gets its own result.
func (a *app) incrementBatch(ctx context.Context, req *httpapi.Request, body IncrementCounterRequest, headerKey string) (int, any, error) {
	switch {
	case body.CounterID != nil || body.Delta != nil || body.ActionType != nil || body.IdempotencyKey != nil:
		return 0, nil, errs.Invalid("increments", "cannot be combined with counter_id, delta, action_type or idempotency_key: put them in the items")
	case headerKey != "":
		return 0, nil, errs.Invalid("Idempotency-Key", "applies to a single increment; give each item of a batch its idempotency_key")
	case len(body.Increments) == 0 || len(body.Increments) > MaxBatch:
		return 0, nil, errs.Invalid("increments", "must hold 1 to %d items, got %d", MaxBatch, len(body.Increments))
	}
	results := make([]IncrementBatchResult, len(body.Increments))
	fail := func(i int, err error) {
		d := httpapi.ErrorDetailOf(err)
		results[i] = IncrementBatchResult{Status: httpapi.Status(err), Error: &d}
	}
	var order []string
	groups := map[string][]int{}
	ops := make([]firestoredb.IncrementOp, len(body.Increments))
	for i, item := range body.Increments {
		id, op, err := item.validate("")
		if err == nil {
			err = a.allow(req, ratelimit.Increment, 1)
		}
		if err != nil {
			fail(i, errs.Under(fmt.Sprintf("increments[%d].", i), err))
			continue
		}
		op.User = req.User
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
			for j, i := range idx {
				switch {
				case err != nil:
					fail(i, unknownOutcome(ctx, err))
				case rs[j].Err != nil:
					fail(i, rs[j].Err)
				default:
					results[i] = IncrementBatchResult{Status: http.StatusOK, IncrementCounterResponse: &IncrementCounterResponse{
						CounterID: id, Delta: rs[j].Delta, Shard: rs[j].Shard, Replayed: rs[j].Replayed}}
				}
			}
		})
	}
	wg.Wait()
	return http.StatusOK, IncrementBatchResponse{Results: results}, nil
}

// commitIncrements is the group commit's flush: one counter's queued
// increments in one commit, under the function's deadline but no caller's
// context (callers may be gone; the others still need the commit).
func (a *app) commitIncrements(id string, ops []firestoredb.IncrementOp) []firestoredb.IncrementResult {
	ctx, cancel := context.WithTimeout(firestoredb.WithLabel(context.Background(), "increment"), a.cfg.FirestoreDeadline)
	defer cancel()
	return a.counters.Apply(ctx, id, ops)
}

// allow takes n tokens of budget b from the caller's limits.
func (a *app) allow(req *httpapi.Request, b ratelimit.Budget, n int) error {
	if ok, wait := a.limiter.Take(req.User, b, n); !ok {
		return &errs.Error{Code: errs.ResourceExhausted, RetryAfter: wait,
			Message: fmt.Sprintf("too many requests from this user (budget %q, see RATE_LIMITS); retry after the time in Retry-After", b)}
	}
	return nil
}

// GetCounterRequest is the input of getCounter (its query string, or a
// callable request's data).
type GetCounterRequest struct {
	CounterID   *string `json:"counter_id"`
	Consistency *string `json:"consistency"`
}

// GetCounterResponse is the answer of getCounter.
type GetCounterResponse struct {
	CounterID   string `json:"counter_id"`
	Count       int64  `json:"count"`
	NumShards   int    `json:"num_shards"`
	Consistency string `json:"consistency"`
	// AsOf is the time the count is exact at (RFC 3339, UTC).
	AsOf string `json:"as_of"`
	// Reshard is the last change of the shard count (eventual reads).
	Reshard *ReshardStatus `json:"reshard,omitempty"`
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

func reshardStatus(r counter.Reshard) *ReshardStatus {
	if r.At.IsZero() {
		return nil
	}
	return &ReshardStatus{From: r.From, To: r.To, At: rfc3339(r.At), Merging: r.Merging(),
		MergeUntil: rfc3339(r.MergeUntil), MergedAt: rfc3339(r.MergedAt)}
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (r GetCounterRequest) validate() (id, consistency string, err error) {
	if id, err = requiredCounterID(r.CounterID); err != nil {
		return "", "", err
	}
	switch consistency = deref(r.Consistency); consistency {
	case "":
		consistency = "eventual"
	case "strong", "eventual":
	default:
		return "", "", errs.Invalid("consistency", "must be \"strong\" or \"eventual\"")
	}
	return id, consistency, nil
}

func (a *app) getCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body GetCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	id, consistency, err := body.validate()
	if err != nil {
		return 0, nil, err
	}
	logging.Annotate(ctx, "counter_id", id)
	resp := GetCounterResponse{CounterID: id, Consistency: consistency}
	if consistency == "strong" {
		if err := a.allow(req, ratelimit.Strong, 1); err != nil {
			return 0, nil, err
		}
		n, err := a.counters.NumShards(ctx, id)
		if err != nil {
			return 0, nil, err
		}
		total, at, err := a.counters.Sum(ctx, id)
		if err != nil {
			return 0, nil, err
		}
		resp.Count, resp.NumShards, resp.AsOf = total, n, rfc3339(at)
		return http.StatusOK, resp, nil
	}
	c, err := a.counters.Read(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	resp.Count, resp.NumShards, resp.AsOf, resp.Reshard = c.Count, c.NumShards, rfc3339(c.AsOf), reshardStatus(c.Reshard)
	return http.StatusOK, resp, nil
}

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

// mergeFor is how long after a shrink an instance may still write to a
// shard >= the new count: its cached shard count lives SHARD_COUNT_CACHE,
// and a commit started just before may take FIRESTORE_DEADLINE.
func (a *app) mergeFor() time.Duration {
	return a.cfg.ShardCountCache + a.cfg.FirestoreDeadline + time.Second
}

func (a *app) reshardCounter(ctx context.Context, req *httpapi.Request) (int, any, error) {
	var body ReshardCounterRequest
	if err := req.Decode(&body); err != nil {
		return 0, nil, err
	}
	id, err := requiredCounterID(body.CounterID)
	if err != nil {
		return 0, nil, err
	}
	if body.NumShards == nil {
		return 0, nil, errs.Invalid("num_shards", "is required")
	}
	if err := counter.ValidateShards(*body.NumShards); err != nil {
		return 0, nil, err
	}
	n := int(*body.NumShards)
	logging.Annotate(ctx, "counter_id", id)
	if req.Anonymous {
		return 0, nil, errs.New(errs.PermissionDenied, "reshardCounter is not open to users of anonymous sign-in")
	}
	if err := a.allow(req, ratelimit.Reshard, 1); err != nil {
		return 0, nil, err
	}
	before, after, err := a.counters.Reshard(ctx, id, n, a.mergeFor(), "request")
	if err != nil {
		return 0, nil, err
	}
	resp := ReshardCounterResponse{CounterID: id, NumShards: after.NumShards, PreviousNumShards: before.NumShards, MergeUntil: rfc3339(after.Reshard.MergeUntil)}
	log := logging.FromContext(ctx)
	if after.NumShards != before.NumShards {
		log.Info("resharded", "from", before.NumShards, "to", after.NumShards)
	}
	if after.NumShards < before.NumShards {
		// Merge what exists now; the roll-up (or reconcile) merges again
		// once no instance can still write to the old shards.
		merged, err := a.counters.MergeShards(ctx, id, after.NumShards, before.NumShards)
		resp.ShardsMerged = merged
		if err != nil {
			log.Warn("the first merge of a shrink failed; the roll-up or reconcile will finish it", "error", err.Error())
		}
	}
	return http.StatusOK, resp, nil
}

// requiredCounterID validates the counter_id every request but
// createCounter must send.
func requiredCounterID(id *string) (string, error) {
	if id == nil {
		return "", errs.Invalid("counter_id", "is required")
	}
	if err := counter.ValidateID(*id); err != nil {
		return "", err
	}
	return *id, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package functions

import (
	"net/http"
	"net/url"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
)

// maxCounterBody is the largest request body of the counter functions.
const maxCounterBody = 64 << 10

// CreateCounterRequest is the body of createCounter.
type CreateCounterRequest struct {
	CounterID      *string `json:"counter_id"`
	NumShards      *int64  `json:"num_shards"`
	FollowersCount *int64  `json:"followers_count"`
	PostType       *string `json:"post_type"`
}

// CreateCounterResponse is the body of a 201 from createCounter.
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

func (a *app) createCounter(w http.ResponseWriter, r *http.Request, req *httpapi.Request) (int, any, error) {
	var body CreateCounterRequest
	if err := httpapi.DecodeJSON(w, r, maxCounterBody, &body); err != nil {
		return 0, nil, err
	}
	id, shards, err := body.counterToCreate()
	if err != nil {
		return 0, nil, err
	}
	req.CounterID = id
	c, err := a.counters.Create(r.Context(), id, shards)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, CreateCounterResponse{CounterID: c.ID, NumShards: c.NumShards}, nil
}

// IncrementCounterRequest is the body of incrementCounter: a delta, or seed
// 004's action_type.
type IncrementCounterRequest struct {
	CounterID  *string `json:"counter_id"`
	Delta      *int64  `json:"delta"`
	ActionType *string `json:"action_type"`
}

// IncrementCounterResponse is the body of a 200 from incrementCounter.
type IncrementCounterResponse struct {
	CounterID string `json:"counter_id"`
	Delta     int64  `json:"delta"`
	Shard     int    `json:"shard"`
}

// maxKeyLength bounds the Idempotency-Key header.
const maxKeyLength = 255

func (b IncrementCounterRequest) delta() (string, int64, error) {
	if b.CounterID == nil {
		return "", 0, errs.Invalid("counter_id", "is required")
	}
	if err := counter.ValidateID(*b.CounterID); err != nil {
		return "", 0, err
	}
	switch {
	case b.Delta != nil && b.ActionType != nil:
		return "", 0, errs.Invalid("delta", "and action_type are exclusive: send one of them")
	case b.ActionType != nil:
		d, err := counter.DeltaFor(*b.ActionType)
		return *b.CounterID, d, err
	case b.Delta != nil:
		return *b.CounterID, *b.Delta, counter.ValidateDelta(*b.Delta)
	}
	return *b.CounterID, 1, nil
}

func validateKey(key string) error {
	if len(key) > maxKeyLength {
		return errs.Invalid("Idempotency-Key", "must be at most %d characters", maxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return errs.Invalid("Idempotency-Key", "must be printable ASCII without spaces")
		}
	}
	return nil
}

func (a *app) incrementCounter(w http.ResponseWriter, r *http.Request, req *httpapi.Request) (int, any, error) {
	var body IncrementCounterRequest
	if err := httpapi.DecodeJSON(w, r, maxCounterBody, &body); err != nil {
		return 0, nil, err
	}
	id, delta, err := body.delta()
	if err != nil {
		return 0, nil, err
	}
	req.CounterID = id
	key := r.Header.Get("Idempotency-Key")
	if err := validateKey(key); err != nil {
		return 0, nil, err
	}
	if err := a.allowIncrement(req.User); err != nil {
		return 0, nil, err
	}
	inc, err := a.counters.Increment(r.Context(), id, delta, key)
	if err != nil {
		return 0, nil, err
	}
	if inc.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return http.StatusOK, IncrementCounterResponse{CounterID: id, Delta: inc.Delta, Shard: inc.Shard}, nil
}

// allowIncrement applies the per-user rate limit. Without authentication
// (AUTH=off) there is no user to limit.
func (a *app) allowIncrement(user string) error {
	if user == "" {
		return nil
	}
	if ok, wait := a.limiter.Allow(user); !ok {
		return &errs.Error{Code: errs.ResourceExhausted, RetryAfter: wait,
			Message: "too many increments from this user; retry after the time in Retry-After"}
	}
	return nil
}

// GetCounterResponse is the body of a 200 from getCounter.
type GetCounterResponse struct {
	CounterID   string `json:"counter_id"`
	Count       int64  `json:"count"`
	NumShards   int    `json:"num_shards"`
	Consistency string `json:"consistency"`
	// AsOf is the time the count is exact at (RFC 3339, UTC).
	AsOf string `json:"as_of"`
}

// getCounterQuery validates getCounter's query string.
func getCounterQuery(q url.Values) (id, consistency string, err error) {
	if err := httpapi.CheckQuery(q, "counter_id", "consistency"); err != nil {
		return "", "", err
	}
	id = q.Get("counter_id")
	if err := counter.ValidateID(id); err != nil {
		return "", "", err
	}
	switch consistency = q.Get("consistency"); consistency {
	case "":
		consistency = "eventual"
	case "strong", "eventual":
	default:
		return "", "", errs.Invalid("consistency", "must be \"strong\" or \"eventual\"")
	}
	return id, consistency, nil
}

func (a *app) getCounter(w http.ResponseWriter, r *http.Request, req *httpapi.Request) (int, any, error) {
	id, consistency, err := getCounterQuery(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	req.CounterID = id
	var c counter.Counter
	if consistency == "strong" {
		c, err = a.counters.Sum(r.Context(), id)
	} else {
		c, err = a.counters.Get(r.Context(), id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, GetCounterResponse{
		CounterID:   id,
		Count:       c.Count,
		NumShards:   c.NumShards,
		Consistency: consistency,
		AsOf:        c.AsOf.UTC().Format(time.RFC3339Nano),
	}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// The functions, typed. Each takes what its docs/reference/api.md section
// says; zero values of optional fields are left out.

// Incremented is incrementCounter's answer, and the key it was sent with:
// on an error whose outcome is unknown, retry later with IncrementWithKey
// and that key.
type Incremented struct {
	CounterID string `json:"counter_id"`
	Delta     int64  `json:"delta"`
	// Shard is the shard written; nil when none was (a like of a member).
	Shard    *int `json:"shard,omitempty"`
	Replayed bool `json:"replayed,omitempty"`
	// Member and Changed, on a unique counter: whether the user is a
	// member now, and whether this call made it so.
	Member  *bool `json:"member,omitempty"`
	Changed *bool `json:"changed,omitempty"`
	// Choice and Previous, on a choice counter: the user's choice now,
	// and before this call ("": none).
	Choice   *string `json:"choice,omitempty"`
	Previous *string `json:"previous,omitempty"`
	Key      string  `json:"-"`
}

// Increment adds delta to counter id once, however often the call is
// retried: it sends a fresh idempotency key, the same on every attempt.
// A counter of a declared kind (KIND:KEY) is created by its first
// increment.
func (c *Client) Increment(ctx context.Context, id string, delta int64) (Incremented, error) {
	return c.IncrementWithKey(ctx, id, delta, NewKey())
}

// IncrementWithKey is Increment with the caller's own key, for a retry
// across processes (a job that may run twice).
func (c *Client) IncrementWithKey(ctx context.Context, id string, delta int64, key string) (Incremented, error) {
	var out Incremented
	err := c.call(ctx, http.MethodPost, "incrementCounter", map[string]any{"counter_id": id, "delta": delta, "idempotency_key": key}, &out, true)
	out.Key = key
	return out, err
}

// LikeFor adds (like true) or removes user uid on unique counter id, as
// the app's backend acting for them: account clean-up, moderation, a
// like recorded elsewhere first. Retried with one key, it applies once.
func (c *Client) LikeFor(ctx context.Context, id, uid string, like bool) (Incremented, error) {
	delta := int64(-1)
	if like {
		delta = 1
	}
	return c.change(ctx, map[string]any{"counter_id": id, "delta": delta, "member": uid})
}

// View adds the signed-in user to distinct counter id (unique viewers);
// a view again changes nothing.
func (c *Client) View(ctx context.Context, id string) (Incremented, error) {
	return c.change(ctx, map[string]any{"counter_id": id})
}

// React sets the signed-in user's choice on choice counter id, in place
// of any other ("" removes it). Retried with one key, it applies once.
func (c *Client) React(ctx context.Context, id, choice string) (Incremented, error) {
	return c.change(ctx, map[string]any{"counter_id": id, "choice": choice})
}

// ReactFor is React as the app's backend acting for user uid.
func (c *Client) ReactFor(ctx context.Context, id, uid, choice string) (Incremented, error) {
	return c.change(ctx, map[string]any{"counter_id": id, "choice": choice, "member": uid})
}

// change sends one change of a counter with a fresh key, the same on
// every attempt.
func (c *Client) change(ctx context.Context, body map[string]any) (Incremented, error) {
	key := NewKey()
	body["idempotency_key"] = key
	var out Incremented
	err := c.call(ctx, http.MethodPost, "incrementCounter", body, &out, true)
	out.Key = key
	return out, err
}

// Erased is eraseMember's answer: how many counters this call removed the
// user from, how many memberships it skipped, whether none is left, and
// where the next call goes on.
type Erased struct {
	UID           string `json:"uid"`
	Counters      int    `json:"counters"`
	Skipped       int    `json:"skipped"`
	Complete      bool   `json:"complete"`
	NextPageToken string `json:"next_page_token,omitempty"`
	// RetryAfterSeconds: the next call no sooner (the last pass waits for
	// every instance to refuse the user's tokens of before).
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
}

// EraseMember removes user uid from every unique counter (account
// deletion, GDPR erasure), calling eraseMember until it is complete,
// waiting when it says to (ERASURE_CHECK + 4 × FIRESTORE_DEADLINE + 1 s,
// 71 s by default, in all). It returns how many counters it removed them from
// in all. Once it begins, the user's tokens issued before are refused
// everywhere: what they make after is undone by its last pass.
func (c *Client) EraseMember(ctx context.Context, uid string) (int, error) {
	total, token, idle := 0, "", 0
	for {
		var out Erased
		if err := c.call(ctx, http.MethodPost, "eraseMember", map[string]any{"uid": uid, "page_token": token}, &out, true); err != nil {
			return total, err
		}
		total += out.Counters
		if out.Complete {
			return total, nil
		}
		if idle++; out.Counters > 0 || out.NextPageToken != token || out.RetryAfterSeconds > 0 {
			idle = 0
		}
		if idle == 3 {
			return total, fmt.Errorf("eraseMember made no progress in %d calls", idle)
		}
		token = out.NextPageToken
		if out.RetryAfterSeconds > 0 {
			select {
			case <-time.After(time.Duration(out.RetryAfterSeconds) * time.Second):
			case <-ctx.Done():
				return total, ctx.Err()
			}
		}
	}
}

// CreateOptions are createCounter's settings of a counter of no kind.
type CreateOptions struct {
	NumShards      int   `json:"num_shards,omitempty"`
	FollowersCount int64 `json:"followers_count,omitempty"`
	Unique         bool  `json:"unique,omitempty"`
	Ranked         *bool `json:"ranked,omitempty"`
}

// Created is createCounter's answer.
type Created struct {
	CounterID string `json:"counter_id"`
	NumShards int    `json:"num_shards"`
	Unique    bool   `json:"unique,omitempty"`
}

// Create creates counter id; a counter of a kind takes the kind's
// settings, and opts must be nil.
func (c *Client) Create(ctx context.Context, id string, opts *CreateOptions) (Created, error) {
	body := map[string]any{"counter_id": id}
	if opts != nil {
		if opts.NumShards > 0 {
			body["num_shards"] = opts.NumShards
		}
		if opts.FollowersCount > 0 {
			body["followers_count"] = opts.FollowersCount
		}
		if opts.Unique {
			body["unique"] = true
		}
		if opts.Ranked != nil {
			body["ranked"] = *opts.Ranked
		}
	}
	var out Created
	err := c.Call(ctx, http.MethodPost, "createCounter", body, &out)
	return out, err
}

// Counter is getCounter's answer.
type Counter struct {
	CounterID   string `json:"counter_id"`
	Count       int64  `json:"count"`
	AsOf        string `json:"as_of"`
	NumShards   int    `json:"num_shards"`
	Consistency string `json:"consistency"`
	Unique      bool   `json:"unique,omitempty"`
	// Member: whether the caller is a member of a unique counter (the
	// client's own identity's: an admin's backend is seldom one).
	Member *bool `json:"member,omitempty"`
	// Counts are a choice counter's members by choice; Choice the
	// caller's own.
	Counts map[string]int64 `json:"counts,omitempty"`
	Choice *string          `json:"choice,omitempty"`
	// Estimate: Count is a distinct counter's estimate, of relative
	// StandardError.
	Estimate      bool    `json:"estimate,omitempty"`
	StandardError float64 `json:"standard_error,omitempty"`
	// Reshard is the last change of the shard count (eventual reads).
	Reshard *struct {
		From       int    `json:"from"`
		To         int    `json:"to"`
		At         string `json:"at"`
		Merging    bool   `json:"merging"`
		MergeUntil string `json:"merge_until,omitempty"`
		MergedAt   string `json:"merged_at,omitempty"`
	} `json:"reshard,omitempty"`
	// Window and From: the days a distinct counter's Count estimates
	// the members of (a read with a window).
	Window string `json:"window,omitempty"`
	From   string `json:"from,omitempty"`
	// History is each bucket's count, oldest first (a read with history).
	History []struct {
		Start  string           `json:"start"`
		Count  int64            `json:"count"`
		Counts map[string]int64 `json:"counts,omitempty"`
	} `json:"history,omitempty"`
}

// Get reads counter id: the roll-up's total, or with strong its exact
// value (a SUM of its shards).
func (c *Client) Get(ctx context.Context, id string, strong bool) (Counter, error) {
	consistency := "eventual"
	if strong {
		consistency = "strong"
	}
	var out Counter
	err := c.Call(ctx, http.MethodGet, "getCounter", map[string]any{"counter_id": id, "consistency": consistency}, &out)
	return out, err
}

// Ranking is topCounters' answer.
type Ranking struct {
	Window string `json:"window"`
	Kind   string `json:"kind,omitempty"`
	Choice string `json:"choice,omitempty"`
	Start  string `json:"start,omitempty"`
	// Rising names what window rising scored with.
	Rising *struct {
		Prior         float64 `json:"prior"`
		BaselineHours int     `json:"baseline_hours"`
		Candidates    int     `json:"candidates"`
	} `json:"rising,omitempty"`
	// Exact, for a rolling window: no other counter can rank among these.
	// When false (rare), Counters holds only those sure of their place.
	// For rising: no counter left out can score above the last listed
	// (often false on a busy app; Counters are then the best scored).
	Exact    *bool `json:"exact,omitempty"`
	Counters []struct {
		CounterID string `json:"counter_id"`
		Count     int64  `json:"count"`
		// Of window rising: the mean per hour before the last, and how
		// far above it the last hour is.
		BaselinePerHour *float64 `json:"baseline_per_hour,omitempty"`
		Score           *float64 `json:"score,omitempty"`
	} `json:"counters"`
}

// Top ranks counters of window (minute, hour, day, last_hour, last_day,
// all, rising), of kind when not "", limit of them (0: the default).
func (c *Client) Top(ctx context.Context, window, kind string, limit int) (Ranking, error) {
	return c.TopChoice(ctx, window, kind, "", limit)
}

// TopChoice is Top of a choice kind's counters by the count of one
// choice (kind's; "": by the people with any).
func (c *Client) TopChoice(ctx context.Context, window, kind, choice string, limit int) (Ranking, error) {
	body := struct {
		Window string `json:"window"`
		Kind   string `json:"kind,omitempty"`
		Choice string `json:"choice,omitempty"`
		Limit  int    `json:"limit,omitempty"` // 0: the function's default
	}{window, kind, choice, limit}
	var out Ranking
	err := c.Call(ctx, http.MethodGet, "topCounters", body, &out)
	return out, err
}

// Members is a page of listMembers.
type Members struct {
	Members []struct {
		UID      string `json:"uid"`
		JoinedAt string `json:"joined_at"`
		Choice   string `json:"choice,omitempty"` // a choice counter's member's
	} `json:"members"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

// ListMembers pages through unique counter id's members ("who liked this
// post"), after pageToken ("" for the first page).
func (c *Client) ListMembers(ctx context.Context, id, pageToken string, limit int) (Members, error) {
	body := struct {
		CounterID string `json:"counter_id"`
		PageToken string `json:"page_token,omitempty"`
		Limit     int    `json:"limit,omitempty"`
	}{id, pageToken, limit}
	var out Members
	err := c.Call(ctx, http.MethodGet, "listMembers", body, &out)
	return out, err
}

// Delete deletes counter id; its id is free again after the answer's
// reusable_after.
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.Call(ctx, http.MethodPost, "deleteCounter", map[string]any{"counter_id": id}, nil)
}

// Reset sets counter id's value to count as of the answer's read time.
func (c *Client) Reset(ctx context.Context, id string, count int64) error {
	return c.Call(ctx, http.MethodPost, "resetCounter", map[string]any{"counter_id": id, "count": count}, nil)
}

// Page is getCounters' answer: a row per counter, in the order asked.
type Page struct {
	Counters []Row `json:"counters"`
}

// Row is one counter of a Page: the roll-up's count (0 for a counter of a
// kind nobody used) as of AsOf, and what its kind tells the caller; a row
// that failed has Error, and no Count.
type Row struct {
	CounterID string           `json:"counter_id"`
	Count     *int64           `json:"count,omitempty"`
	AsOf      string           `json:"as_of,omitempty"`
	Member    *bool            `json:"member,omitempty"`
	Choice    *string          `json:"choice,omitempty"`
	Counts    map[string]int64 `json:"counts,omitempty"`
	Estimate  bool             `json:"estimate,omitempty"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Counters reads counters ids (at most 200) in one call, each as fresh as
// the functions' FEED_CACHE.
func (c *Client) Counters(ctx context.Context, ids []string) (Page, error) {
	var out Page
	err := c.Call(ctx, http.MethodPost, "getCounters", map[string]any{"counter_ids": ids}, &out)
	return out, err
}

// Feed reads every kind of every key in one call ("likes:post-1",
// "views:post-1", "likes:post-2", …; at most 200 counters).
func (c *Client) Feed(ctx context.Context, keys, kinds []string) (Page, error) {
	var out Page
	err := c.Call(ctx, http.MethodPost, "getCounters", map[string]any{"keys": keys, "kinds": kinds}, &out)
	return out, err
}

package loadtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Liker is what the likes scenario needs of the system under test: a
// unique counter, and users who like and unlike it.
type Liker interface {
	CreateUnique(ctx context.Context, id string, shards int) error
	// Like adds user u (like) or removes them, and says whether u is a
	// member after; its key makes a retry of the same press count once.
	Like(ctx context.Context, id string, u int, like bool, key string) (bool, Outcome)
	Users() int
	Strong(ctx context.Context, id string) (int64, error)
	// Members counts the member documents, at the end.
	Members(ctx context.Context, id string) (int64, error)
}

// LikesReport is the outcome of the likes scenario.
type LikesReport struct {
	Report
	Users int `json:"users"`
	// Liking is how many users' last action was a like; the strong read
	// and the member documents must both equal it.
	Liking     int64 `json:"liking"`
	MemberDocs int64 `json:"member_docs"`
}

// Likes has U users like and unlike one unique counter at random, each
// press sent twice now and then (a double tap), every action retried with
// its key until its answer is definite. Each worker plays its own users in
// turn, so every user's last action is known; at the end the strong read
// and the member documents must equal the users whose last action was a
// like.
func Likes(ctx context.Context, l Liker, mode string, o Options, shards int) (LikesReport, error) {
	id := fmt.Sprintf("load-likes-%s-%d", IDSafe(mode), time.Now().UnixNano())
	if err := l.CreateUnique(ctx, id, shards); err != nil {
		return LikesReport{}, fmt.Errorf("create counter: %w", err)
	}
	users := l.Users()
	o.Concurrency = min(o.Concurrency, users) // a user's actions are one worker's, in turn
	member := make([]atomic.Bool, users)
	turns := NewStrider(users, o.Concurrency)
	var actions atomic.Int64
	before, counted := Snapshot(ctx, l)
	stats := Run(ctx, o, func(ctx context.Context, worker int) Outcome {
		u := turns.User(worker)
		like := rand.IntN(2) == 0
		return Tap(ctx, fmt.Sprintf("%s-%d-%d", id, u, actions.Add(1)), func(key string) Outcome {
			m, out := l.Like(ctx, id, u, like, key)
			if out.OK {
				member[u].Store(m)
			}
			return out
		})
	})
	r := LikesReport{Users: users, Report: Report{Scenario: "likes", Mode: mode, Concurrency: o.Concurrency, Shards: shards, Counters: 1, Stats: stats}}
	for i := range member {
		if member[i].Load() {
			r.Liking++
		}
	}
	strong, err := l.Strong(ctx, id)
	if err != nil {
		return r, err
	}
	if r.MemberDocs, err = l.Members(ctx, id); err != nil {
		return r, err
	}
	r.Check = &Check{Acknowledged: r.Liking, Strong: strong, Exact: strong == r.Liking && r.MemberDocs == r.Liking}
	if after, ok := Snapshot(ctx, l); ok && counted {
		r.Cost = CostOf(before, after, stats.OK)
	}
	return r, nil
}

// CreateUnique creates a unique counter.
func (f *Functions) CreateUnique(ctx context.Context, id string, shards int) error {
	return f.create(ctx, map[string]any{"counter_id": id, "num_shards": shards, "unique": true})
}

// Users is how many users the functions are called as (one per token).
func (f *Functions) Users() int { return max(1, len(f.Tokens)) }

// Like likes or unlikes counter id as the holder of token u.
func (f *Functions) Like(ctx context.Context, id string, u int, like bool, key string) (bool, Outcome) {
	action := map[bool]string{true: "increment", false: "decrement"}[like]
	var resp struct {
		Member bool `json:"member"`
	}
	token := ""
	if len(f.Tokens) > 0 {
		token = f.Tokens[u%len(f.Tokens)]
	}
	status, err := f.DoAs(ctx, f.Bases[rand.IntN(len(f.Bases))], token, "POST", "incrementCounter", "",
		map[string]any{"counter_id": id, "action_type": action, "idempotency_key": key}, &resp)
	return resp.Member, Outcome{Status: status, OK: err == nil}
}

// Members asks reconcileCounters (a private function, reachable locally)
// to audit the counter, which brings its shards to its member count (the
// member documents counted at the shards' read time), then reads it.
func (f *Functions) Members(ctx context.Context, id string) (int64, error) {
	if _, err := f.Do(ctx, "POST", "reconcileCounters", "", map[string]any{"counter_id": id}, nil); err != nil {
		return 0, err
	}
	return f.Strong(ctx, id)
}

// RawLikes is what an app does today without shardcount: a transaction
// per like that reads the user's member document, creates (or deletes) it
// and increments (or decrements) a random shard.
type RawLikes struct {
	Raw   *Raw
	Count int // users
}

func (r *RawLikes) CreateUnique(ctx context.Context, id string, shards int) error {
	return r.Raw.CreateCounter(ctx, id, shards)
}

func (r *RawLikes) Users() int { return r.Count }

func (r *RawLikes) Like(ctx context.Context, id string, u int, like bool, _ string) (bool, Outcome) {
	c := r.Raw.Client
	ref := c.Doc("counters/" + id + "/members/user-" + strconv.Itoa(u))
	shard := c.Doc("counters/" + id + "/shards/" + strconv.Itoa(rand.IntN(r.Raw.shards[id])))
	err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		_, err := tx.Get(ref)
		exists := err == nil
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		switch {
		case like && !exists:
			if err := tx.Create(ref, map[string]any{"joined_at": firestore.ServerTimestamp}); err != nil {
				return err
			}
			return tx.Set(shard, map[string]any{"count": firestore.Increment(1)}, firestore.MergeAll)
		case !like && exists:
			if err := tx.Delete(ref); err != nil {
				return err
			}
			return tx.Set(shard, map[string]any{"count": firestore.Increment(-1)}, firestore.MergeAll)
		}
		return nil
	})
	if err != nil {
		return false, Outcome{Status: http.StatusServiceUnavailable}
	}
	return like, Outcome{Status: http.StatusOK, OK: true}
}

func (r *RawLikes) Strong(ctx context.Context, id string) (int64, error) { return r.Raw.Sum(ctx, id) }

func (r *RawLikes) Members(ctx context.Context, id string) (int64, error) {
	res, err := r.Raw.Client.Collection("counters/" + id + "/members").NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, err
	}
	var out struct {
		N int64 `firestore:"n"`
	}
	err = res.DataTo(&out)
	return out.N, err
}

// SignUp creates n users with an email and a password in the Auth emulator
// at host and returns their ID tokens: tokens of the project the emulator
// was started with. (Users of anonymous sign-in could not create the
// counters a run needs.)
func SignUp(ctx context.Context, host string, n int) ([]string, error) {
	run := time.Now().UnixNano()
	tokens := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body, _ := json.Marshal(map[string]any{"email": fmt.Sprintf("loadgen-%d-%d@example.com", run, i), "password": "loadgen-password", "returnSecureToken": true})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+"/identitytoolkit.googleapis.com/v1/accounts:signUp?key=loadgen", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var out struct {
				IDToken string `json:"idToken"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IDToken == "" {
				errs[i] = fmt.Errorf("sign up: %s", resp.Status)
				return
			}
			tokens[i] = out.IDToken
		})
	}
	wg.Wait()
	return tokens, errors.Join(errs...)
}

// UIDOf is the uid an ID token names (its sub), read without checking it:
// the token is the load generator's own, from SignUp.
func UIDOf(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) < 2 {
		return "", fmt.Errorf("not an ID token")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Sub == "" {
		return "", fmt.Errorf("an ID token without sub: %v", err)
	}
	return claims.Sub, nil
}

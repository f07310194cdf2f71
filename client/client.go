// Package client calls shardcount's functions from an app's backend (a
// job, a Firestore trigger of the app's own) as a service identity with the
// custom claim admin: true, which may do what end users may not: create
// counters of any size, change them by any delta, reset and delete them,
// list a counter's members.
//
// The identity's ID token comes from a custom token the Admin SDK mints,
// exchanged with Firebase Auth (the call the client SDKs make), and is
// kept until shortly before it expires: one exchange an hour, not one per
// call. Calls are retried as shardcount's answers say: an UNAVAILABLE
// (503) or RESOURCE_EXHAUSTED (429) answer after the wait it names
// (retry_after_seconds), with the same body, so an increment's
// idempotency key makes it count once; nothing else is retried.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"firebase.google.com/go/v4/auth"
)

// Client calls the functions as one service identity. Its zero value is
// not usable: use New.
type Client struct {
	functions, apiKey, uid string
	auth                   *auth.Client
	// HTTP is the client the calls go through (default
	// http.DefaultClient); MaxAttempts bounds the attempts of one call
	// (default 8).
	HTTP        *http.Client
	MaxAttempts int

	mu      sync.Mutex
	idToken string
	expires time.Time
	sleep   func(ctx context.Context, d time.Duration) error // tests record the waits
}

// New returns a client of the functions at functionsURL (such as
// https://us-central1-my-project.cloudfunctions.net), calling as the
// identity uid (say "backend:posts") of the project whose Web API key is
// apiKey; authClient is the Admin SDK's. With FIREBASE_AUTH_EMULATOR_HOST
// set, tokens come from the Auth emulator.
func New(functionsURL, apiKey, uid string, authClient *auth.Client) *Client {
	return &Client{functions: functionsURL, apiKey: apiKey, uid: uid, auth: authClient}
}

// Error is a function's refusal.
type Error struct {
	Status     int    // HTTP status
	Code       string // INVALID_ARGUMENT, NOT_FOUND, …; "" when the answer was not shardcount's (a proxy's 502)
	Message    string
	RetryAfter time.Duration // how long to wait before trying again, if at all
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Retryable reports whether a retry with the same body can succeed: the
// only errors Call retries. A 503 or 429 whose body is not shardcount's
// (the platform's own) says so too.
func (e *Error) Retryable() bool {
	return e.Code == "UNAVAILABLE" || e.Code == "RESOURCE_EXHAUSTED" ||
		e.Code == "" && (e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests)
}

// unknownOutcome reports whether err leaves it unknown if the call took
// effect: the connection failed, or a gateway gave up on the function
// (502, 504). Only a keyed change may be retried then: its key makes a
// second attempt count once.
func unknownOutcome(ctx context.Context, err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Code == "" && (e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout)
	}
	return err != nil && ctx.Err() == nil
}

// IDToken returns the identity's ID token, exchanging a fresh custom token
// when it is missing or about to expire: for a caller of the functions
// other than Call (cmd/loadgen creates its counters with it).
func (c *Client) IDToken(ctx context.Context) (string, error) { return c.token(ctx) }

// dropToken forgets token, if it is still the one kept.
func (c *Client) dropToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idToken == token {
		c.idToken = ""
	}
}

// token returns the identity's ID token, exchanging a fresh custom token
// when it is missing or about to expire.
func (c *Client) token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idToken != "" && time.Now().Before(c.expires.Add(-5*time.Minute)) {
		return c.idToken, nil
	}
	custom, err := c.auth.CustomTokenWithClaims(ctx, c.uid, map[string]any{"admin": true})
	if err != nil {
		return "", fmt.Errorf("client: mint a custom token: %w", err)
	}
	endpoint := "https://identitytoolkit.googleapis.com"
	if host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST"); host != "" {
		endpoint = "http://" + host + "/identitytoolkit.googleapis.com"
	}
	var out struct {
		IDToken   string `json:"idToken"`
		ExpiresIn string `json:"expiresIn"`
	}
	body, _ := json.Marshal(map[string]any{"token": custom, "returnSecureToken": true})
	if err := c.do(ctx, http.MethodPost, endpoint+"/v1/accounts:signInWithCustomToken?key="+url.QueryEscape(c.apiKey), "", body, &out); err != nil {
		return "", fmt.Errorf("client: exchange the custom token: %w", err)
	}
	seconds, _ := strconv.Atoi(out.ExpiresIn)
	c.idToken, c.expires = out.IDToken, time.Now().Add(time.Duration(seconds)*time.Second)
	return c.idToken, nil
}

// Call calls function fn with a JSON body (a GET function's arguments go
// in its query, from body's fields) and decodes its answer into out,
// retrying what shardcount says a retry can fix, with the same body.
func (c *Client) Call(ctx context.Context, method, fn string, body, out any) error {
	return c.call(ctx, method, fn, body, out, false)
}

// call is Call; keyed says the body carries an idempotency key, so an
// attempt whose outcome is unknown is retried too.
func (c *Client) call(ctx context.Context, method, fn string, body, out any, keyed bool) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	target := c.functions + "/" + fn
	if method == http.MethodGet {
		target += "?" + query(body)
		b = nil
	}
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = 8
	}
	for attempt := 1; ; attempt++ {
		token, err := c.token(ctx)
		if err != nil {
			return err
		}
		err = c.do(ctx, method, target, token, b, out)
		var e *Error
		isErr := errors.As(err, &e)
		if isErr && e.Status == http.StatusUnauthorized {
			c.dropToken(token) // expired or revoked early: mint a fresh one next time
		}
		retry := isErr && e.Retryable() || keyed && unknownOutcome(ctx, err)
		if err == nil || !retry || attempt == attempts {
			return err
		}
		var wait time.Duration
		if isErr {
			wait = e.RetryAfter
		}
		if wait <= 0 {
			wait = time.Duration(attempt) * 200 * time.Millisecond
		}
		sleep := c.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if sleep(ctx, wait) != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) do(ctx context.Context, method, target, token string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	httpc := c.HTTP
	if httpc == nil {
		httpc = http.DefaultClient
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		// shardcount's {"error": {"code": "UNAVAILABLE", …}}; Firebase
		// Auth's code is a number, and a proxy's body is not JSON at all.
		var e struct {
			Error struct {
				Code    json.RawMessage `json:"code"`
				Message string          `json:"message"`
			} `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		var code string
		json.Unmarshal(e.Error.Code, &code) // a number leaves it ""
		var retry time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			retry = time.Duration(s) * time.Second
		}
		return &Error{Status: resp.StatusCode, Code: code, Message: cmp.Or(e.Error.Message, resp.Status), RetryAfter: retry}
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// query turns a body's fields into a query string.
func query(body any) string {
	b, _ := json.Marshal(body)
	var fields map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // 1000000, not 1e+06
	d.Decode(&fields)
	v := url.Values{}
	for k, x := range fields {
		v.Set(k, fmt.Sprint(x))
	}
	return v.Encode()
}

// NewKey returns a fresh idempotency key: the same key on every attempt of
// one increment makes it count once.
func NewKey() string { return rand.Text() }

package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// The retry rule against a stand-in for the functions (the answers a
// deployed function gives under load, which the emulator cannot be made
// to give on demand): UNAVAILABLE and RESOURCE_EXHAUSTED are retried after
// the wait they name, with the same body; nothing else is.
func TestTheRetryRule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []int // status of each attempt; 200 after them
		attempts int
		ok       bool
		waits    []time.Duration
	}{
		{"a busy function, then a spent budget", []int{503, 429}, 3, true, []time.Duration{time.Second, 2 * time.Second}},
		{"a bad request", []int{400}, 1, false, nil},
		{"a refusal", []int{403}, 1, false, nil},
		{"a bug", []int{500}, 1, false, nil},
		{"busy every time", []int{503, 503, 503, 503}, 3, false, []time.Duration{time.Second, time.Second}},
		// Outcome unknown: the key makes a second attempt count once.
		{"a gateway gave up (502, 504)", []int{502, 504}, 3, true, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				bodies = append(bodies, string(b))
				if r.Header.Get("Authorization") != "Bearer the-token" {
					t.Errorf("no identity: %q", r.Header.Get("Authorization"))
				}
				if n := len(bodies); n <= len(tc.answers) {
					status := tc.answers[n-1]
					code := map[int]string{503: "UNAVAILABLE", 429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 500: "INTERNAL"}[status]
					w.Header().Set("Retry-After", map[int]string{503: "1", 429: "2"}[status])
					w.WriteHeader(status)
					io.WriteString(w, `{"error":{"code":"`+code+`","message":"no"}}`)
					return
				}
				io.WriteString(w, `{"counter_id":"views:p","delta":1}`)
			}))
			defer srv.Close()
			var waits []time.Duration
			c := &Client{functions: srv.URL, idToken: "the-token", expires: time.Now().Add(time.Hour), MaxAttempts: 3,
				sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			_, err := c.Increment(context.Background(), "views:p", 1)
			var e *Error
			if tc.ok != (err == nil) || !tc.ok && !errors.As(err, &e) {
				t.Errorf("err = %v", err)
			}
			if len(bodies) != tc.attempts || !slices.Equal(waits, tc.waits) {
				t.Errorf("%d attempts after waits %v, want %d after %v", len(bodies), waits, tc.attempts, tc.waits)
			}
			for _, b := range bodies {
				if b != bodies[0] {
					t.Errorf("a retry sent another body (another key?): %s, then %s", bodies[0], b)
				}
			}
		})
	}
}

// TestOnlyAKeyedChangeIsRetriedWhenItsOutcomeIsUnknown: a read is not
// retried after a gateway's 502 (nor a transport error), the platform's
// own 503 without shardcount's body is, and a 401 drops the kept token.
func TestOnlyAKeyedChangeIsRetriedWhenItsOutcomeIsUnknown(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		switch r.URL.Path {
		case "/getCounter":
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>bad gateway</html>")
		case "/topCounters":
			if calls%2 == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, "<html>busy</html>")
				return
			}
			io.WriteString(w, `{"counters":[]}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"UNAUTHENTICATED","message":"expired"}}`)
		}
	}))
	defer srv.Close()
	c := &Client{functions: srv.URL, idToken: "the-token", expires: time.Now().Add(time.Hour),
		sleep: func(context.Context, time.Duration) error { return nil }}
	_, err := c.Get(context.Background(), "views:p", false)
	var e *Error
	if !errors.As(err, &e) || e.Status != 502 || e.Code != "" || calls != 1 {
		t.Errorf("a read through a 502: %v after %d calls, want the 502 after one", err, calls)
	}
	calls = 0
	if _, err := c.Top(context.Background(), "hour", "", 0); err != nil || calls != 2 {
		t.Errorf("the platform's 503: %v after %d calls, want a retry", err, calls)
	}
	calls = 0
	if err := c.Delete(context.Background(), "views:p"); !errors.As(err, &e) || e.Status != 401 || calls != 1 {
		t.Errorf("a 401: %v after %d calls", err, calls)
	}
	if c.idToken != "" {
		t.Error("the token refused with 401 is still kept")
	}
}

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

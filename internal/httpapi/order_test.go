package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// orderedEdge is an edge whose every step can refuse: the token ("Bearer
// good"), App Check ("good-app"), the budget (admit) and the body; it
// counts the handler's calls.
func orderedEdge(admit *atomic.Bool, handled *atomic.Int64) http.HandlerFunc {
	e := &Edge{Logger: quietLogger(), AuthRequired: true, AppCheck: &AppCheck{}}
	c := &checks{apps: fakeApps{},
		auth: func() (Authenticator, error) {
			return func(_ context.Context, r *http.Request) (Caller, error) {
				if r.Header.Get("Authorization") != "Bearer good" {
					return Caller{}, errs.New(errs.Unauthenticated, "bad token")
				}
				return Caller{UID: "u1"}, nil
			}, nil
		},
	}
	return serve(e, c, Endpoint{Name: "x", Method: http.MethodPost, Public: true, MaxBody: 1 << 20},
		func(ctx context.Context, req *Request) (int, any, error) {
			handled.Add(1)
			return echo(ctx, req)
		},
		func(context.Context, *Request) error {
			if !admit.Load() {
				return &errs.Error{Code: errs.ResourceExhausted, RetryAfter: time.Second, Message: "over budget"}
			}
			return nil
		})
}

// TestCheapRejectionFirst: each step of the edge refuses before the next
// one costs anything: method, content type, size, token, App Check,
// budget, then the JSON. Each case would fail a later step too; the
// answer must be the earliest.
func TestCheapRejectionFirst(t *testing.T) {
	var admit atomic.Bool
	var handled atomic.Int64
	h := orderedEdge(&admit, &handled)
	hostile := `{"data":{"count":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 7000), ",") + `]}}`
	auth := []string{"Authorization", "Bearer good", "X-Firebase-AppCheck", "good-app"}
	for _, tc := range []struct {
		name, method, contentType, body string
		headers                         []string
		admit                           bool
		status                          int
		code                            string
	}{
		{"method before all", "PUT", "text/plain", strings.Repeat("x", 2<<20), nil, false, 405, "METHOD_NOT_ALLOWED"},
		{"content type before size", "POST", "text/plain", strings.Repeat("x", 2<<20), nil, false, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"size before the token", "POST", ctJSON, strings.Repeat("x", 2<<20), nil, false, 413, "PAYLOAD_TOO_LARGE"},
		{"the token before App Check", "POST", ctJSON, hostile, nil, false, 401, "UNAUTHENTICATED"},
		{"App Check before the budget", "POST", ctJSON, hostile, auth[:2], false, 401, "UNAUTHENTICATED"},
		{"the budget before the JSON", "POST", ctJSON, `{"data":{`, auth, false, 429, "RESOURCE_EXHAUSTED"},
		{"the JSON last", "POST", ctJSON, `{"data":{`, auth, true, 400, "INVALID_ARGUMENT"},
		{"hostile numbers, decoded last and cheaply", "POST", ctJSON, hostile, auth, true, 400, "INVALID_ARGUMENT"},
		{"all good", "POST", ctJSON, `{"data":{"count":3e0}}`, auth, true, 200, ""},
	} {
		admit.Store(tc.admit)
		handled.Store(0)
		start := time.Now()
		r := call(h, tc.method, "/x", tc.contentType, tc.body, tc.headers...)
		if r.status != tc.status || r.code != tc.code {
			t.Errorf("%s: %d %.200s, want %d %s", tc.name, r.status, r.body, tc.status, tc.code)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: took %s", tc.name, took)
		}
		if want := int64(0); tc.status < 400 || tc.code == "INVALID_ARGUMENT" {
			want = 1
			if handled.Load() != want {
				t.Errorf("%s: the handler ran %d times, want %d", tc.name, handled.Load(), want)
			}
		} else if handled.Load() != want {
			t.Errorf("%s: the handler ran although the edge refused", tc.name)
		}
	}
}

// TestEarlyErrorsHaveOneStatus: the errors the edge finds before it knows
// the protocol have the same HTTP status in both, and their body serves
// both: the plain API's code and the callable protocol's status.
func TestEarlyErrorsHaveOneStatus(t *testing.T) {
	for _, code := range []errs.Code{errs.Unauthenticated, errs.PermissionDenied, errs.ResourceExhausted, errs.Unavailable} {
		if w := wireOf[code]; w.status != w.callableHTTP {
			t.Errorf("%s: %d plain, %d callable", code, w.status, w.callableHTTP)
		}
	}
	var admit atomic.Bool
	var handled atomic.Int64
	r := call(orderedEdge(&admit, &handled), "POST", "/x", ctJSON, `{"data":{}}`, "Authorization", "Bearer good", "X-Firebase-AppCheck", "good-app")
	for _, want := range []string{`"code":"RESOURCE_EXHAUSTED"`, `"status":"RESOURCE_EXHAUSTED"`, `"retry_after_seconds":1`} {
		if !strings.Contains(r.body, want) || r.header.Get("Retry-After") != "1" {
			t.Errorf("an early 429 lacks %s: %s %v", want, r.body, r.header)
		}
	}
}

// TestTheTokenBeforeTheBody: a request without a valid token is answered
// 401 from its headers, its body never read (here a body that never
// comes), and its connection closed rather than drained; so is one over
// its budget. A caller that passes reads its body.
func TestTheTokenBeforeTheBody(t *testing.T) {
	var admit atomic.Bool
	var handled atomic.Int64
	h := orderedEdge(&admit, &handled)
	for _, tc := range []struct {
		name    string
		headers []string
		admit   bool
		status  int
	}{
		{"no token", nil, true, 401},
		{"a bad token", []string{"Authorization", "Bearer bad"}, true, 401},
		{"over budget", []string{"Authorization", "Bearer good", "X-Firebase-AppCheck", "good-app"}, false, 429},
	} {
		admit.Store(tc.admit)
		body, never := io.Pipe() // a slow upload: nothing arrives
		req := httptest.NewRequest("POST", "/x", body)
		req.ContentLength = 1 << 20
		req.Header.Set("Content-Type", ctJSON)
		for i := 0; i+1 < len(tc.headers); i += 2 {
			req.Header.Set(tc.headers[i], tc.headers[i+1])
		}
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { h(rec, req); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second): // a handler that waits for the body never answers
			t.Fatalf("%s: no answer: the edge waits for the body", tc.name)
		}
		never.Close()
		if rec.Code != tc.status || rec.Header().Get("Connection") != "close" {
			t.Errorf("%s: %d, Connection %q; want %d and the connection closed", tc.name, rec.Code, rec.Header().Get("Connection"), tc.status)
		}
	}
	if handled.Load() != 0 {
		t.Errorf("the handler ran %d times", handled.Load())
	}
}

// TestASlowBodyEndsWithItsCall: a caller with a token (anonymous sign-in
// makes them free) sent a 1 MiB body slowly, holding its memory as long
// as it liked. The read now ends at the call's deadline.
func TestASlowBodyEndsWithItsCall(t *testing.T) {
	var admit atomic.Bool
	admit.Store(true)
	h := orderedEdge(&admit, new(atomic.Int64))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 300*time.Millisecond) // the call's deadline
		defer cancel()
		h(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer good\r\nX-Firebase-AppCheck: good-app\r\nContent-Length: 1048576\r\n\r\n{\"pad\":\"")
	// The rest never comes. A generous wait for a loaded machine, far
	// below forever, which is what a read without a deadline waits.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a slow body with a token got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a slow body: %d, want 400 once the call's deadline passed", resp.StatusCode)
	}
}

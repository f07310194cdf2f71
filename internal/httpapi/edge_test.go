package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

type body struct {
	Name  *string `json:"name"`
	Count *int64  `json:"count"`
	Inner *struct {
		List []string `json:"list"`
	} `json:"inner"`
}

func quietLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func echo(_ context.Context, req *Request) (int, any, error) {
	var b body
	if err := req.Decode(&b); err != nil {
		return 0, nil, err
	}
	if b.Count != nil && *b.Count < 0 {
		return 0, nil, errs.Invalid("count", "must not be negative")
	}
	return http.StatusCreated, map[string]any{"ok": true, "count": b.Count, "user": req.User}, nil
}

func testEdge(method string) http.HandlerFunc {
	e := &Edge{Logger: quietLogger(), Origins: []string{"https://app.example.com"}}
	return serve(e, nil, Endpoint{Name: "test", Method: method, Public: true, MaxBody: 1 << 10}, echo)
}

type result struct {
	status int
	code   string // error.code (plain) or error.status (callable)
	body   string
	header http.Header
}

func call(h http.HandlerFunc, method, target, contentType, b string, headers ...string) result {
	req := httptest.NewRequest(method, target, strings.NewReader(b))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h(rec, req)
	var e struct {
		Error struct{ Code, Status string }
	}
	json.Unmarshal(rec.Body.Bytes(), &e)
	return result{rec.Code, cmp.Or(e.Error.Code, e.Error.Status), rec.Body.String(), rec.Header()}
}

const ctJSON = "application/json"

func TestPlainPOST(t *testing.T) {
	h := testEdge(http.MethodPost)
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		code, mention           string
	}{
		{"ok", ctJSON, `{"name":"a","count":1}`, 201, "", `"count":1`},
		{"charset", "application/json; charset=utf-8", `{"count":2}`, 201, "", `"count":2`},
		{"domain error", ctJSON, `{"count":-1}`, 400, "INVALID_ARGUMENT", "count must not be negative"},
		{"unknown field", ctJSON, `{"nope":1}`, 400, "INVALID_ARGUMENT", "nope is not a known field"},
		{"wrong case", ctJSON, `{"Count":1}`, 400, "INVALID_ARGUMENT", "Count is not a known field"},
		{"duplicate key", ctJSON, `{"count":1,"count":2}`, 400, "INVALID_ARGUMENT", "count is given more than once"},
		{"nested duplicate", ctJSON, `{"inner":{"list":[],"list":[]}}`, 400, "INVALID_ARGUMENT", "inner.list is given more than once"},
		{"wrong type", ctJSON, `{"count":"1"}`, 400, "INVALID_ARGUMENT", "count must be an integer"},
		{"fraction", ctJSON, `{"count":1.5}`, 400, "INVALID_ARGUMENT", "count must be an integer"},
		{"overflow", ctJSON, `{"count":99999999999999999999}`, 400, "INVALID_ARGUMENT", "count must be an integer"},
		{"null body", ctJSON, `null`, 400, "INVALID_ARGUMENT", "not null"},
		{"array body", ctJSON, `[]`, 400, "INVALID_ARGUMENT", "JSON object"},
		{"empty body", ctJSON, ``, 400, "INVALID_ARGUMENT", "JSON object"},
		{"trailing data", ctJSON, `{} {}`, 400, "INVALID_ARGUMENT", "JSON"},
		{"truncated", ctJSON, `{"count":`, 400, "INVALID_ARGUMENT", "JSON"},
		{"invalid UTF-8", ctJSON, "{\"name\":\"\xff\"}", 400, "INVALID_ARGUMENT", "JSON"},
		{"too deep", ctJSON, `{"inner":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`, 400, "INVALID_ARGUMENT", "nested"},
		{"too large", ctJSON, `{"name":"` + strings.Repeat("x", 2000) + `"}`, 413, "PAYLOAD_TOO_LARGE", "bytes"},
		{"form", "application/x-www-form-urlencoded", `name=a`, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
		{"no content type", "", `{"name":"a"}`, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
		{"text", "text/plain", `{"name":"a"}`, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
	} {
		r := call(h, "POST", "/test", tc.contentType, tc.body)
		if r.status != tc.status || r.code != tc.code || !strings.Contains(r.body, tc.mention) {
			t.Errorf("%s: %d %s, want %d %s mentioning %q", tc.name, r.status, r.body, tc.status, tc.code, tc.mention)
		}
	}
	if r := call(h, "GET", "/test", "", ""); r.status != 405 || r.code != "METHOD_NOT_ALLOWED" || r.header.Get("Allow") != "POST, OPTIONS" {
		t.Errorf("GET: %d %s Allow=%q", r.status, r.body, r.header.Get("Allow"))
	}
}

func TestPlainGETReadsTheQueryIntoTheSameStruct(t *testing.T) {
	h := testEdge(http.MethodGet)
	for _, tc := range []struct {
		query         string
		status        int
		code, mention string
	}{
		{"?name=a&count=3", 201, "", `"count":3`},
		{"?count=x", 400, "INVALID_ARGUMENT", "count must be an integer"},
		{"?Count=1", 400, "INVALID_ARGUMENT", "Count is not a known parameter"},
		{"?count=1&count=2", 400, "INVALID_ARGUMENT", "count must be given once"},
		{"?count=-1", 400, "INVALID_ARGUMENT", "count must not be negative"},
	} {
		r := call(h, "GET", "/test"+tc.query, "", "")
		if r.status != tc.status || r.code != tc.code || !strings.Contains(r.body, tc.mention) {
			t.Errorf("%s: %d %s", tc.query, r.status, r.body)
		}
	}
	// A POST to a GET endpoint must be a callable request.
	if r := call(h, "POST", "/test", ctJSON, `{"count":1}`); r.status != 405 || !strings.Contains(r.body, "callable") {
		t.Errorf("plain POST to a GET endpoint: %d %s", r.status, r.body)
	}
}

func TestCallable(t *testing.T) {
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		h := testEdge(method)
		for _, tc := range []struct {
			name, body string
			status     int
			code       string // error.status
			mention    string
		}{
			{"ok", `{"data":{"count":4}}`, 200, "", `{"result":{"count":4,"ok":true,"user":""}}`},
			{"no argument", `{"data":null}`, 200, "", `"result":{`},
			{"domain error", `{"data":{"count":-1}}`, 400, "INVALID_ARGUMENT", `"field":"count"`},
			{"unknown field", `{"data":{"x":1}}`, 400, "INVALID_ARGUMENT", `"code":"INVALID_ARGUMENT"`},
			{"data not an object", `{"data":[1]}`, 400, "INVALID_ARGUMENT", "JSON object"},
			// Refused before the body is read: both shapes, the callable
			// SDKs' status among them.
			{"too large", `{"data":{"name":"` + strings.Repeat("x", 2000) + `"}}`, 413, "PAYLOAD_TOO_LARGE", `"status":"INVALID_ARGUMENT"`},
		} {
			r := call(h, "POST", "/test", ctJSON, tc.body)
			if r.status != tc.status || r.code != tc.code || !strings.Contains(r.body, tc.mention) {
				t.Errorf("%s endpoint, %s: %d %s, want %d %s mentioning %s", method, tc.name, r.status, r.body, tc.status, tc.code, tc.mention)
			}
		}
	}
}

// TestCallableStatusNamesAreTheSDKs checks every code maps to a status name
// the Firebase SDKs know (an unknown one reaches apps as "internal").
func TestCallableStatusNamesAreTheSDKs(t *testing.T) {
	known := map[string]int{"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403,
		"NOT_FOUND": 404, "ALREADY_EXISTS": 409, "RESOURCE_EXHAUSTED": 429, "INTERNAL": 500, "UNAVAILABLE": 503,
		"OUT_OF_RANGE": 400, "DATA_LOSS": 500}
	for code, w := range wireOf {
		if status, ok := known[w.callableStatus]; !ok || status != w.callableHTTP {
			t.Errorf("%s: callable %s %d", code, w.callableStatus, w.callableHTTP)
		}
	}
	rec := httptest.NewRecorder()
	writeCallableError(rec, &errs.Error{Code: errs.Unavailable, Message: "busy", RetryAfter: 1500 * time.Millisecond})
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), `"retry_after_seconds":2`) {
		t.Errorf("callable 503: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestCORS(t *testing.T) {
	h := testEdge(http.MethodGet)
	for _, tc := range []struct {
		method, origin string
		status         int
		allowOrigin    string
	}{
		{"OPTIONS", "https://app.example.com", 204, "https://app.example.com"},
		{"OPTIONS", "https://evil.example.com", 403, ""},
		{"GET", "https://app.example.com", 201, "https://app.example.com"},
		{"GET", "https://evil.example.com", 201, ""},
	} {
		r := call(h, tc.method, "/test", "", "", "Origin", tc.origin)
		if r.status != tc.status || r.header.Get("Access-Control-Allow-Origin") != tc.allowOrigin {
			t.Errorf("%s from %s: %d ACAO %q", tc.method, tc.origin, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
	}
	r := call(h, "OPTIONS", "/test", "", "", "Origin", "https://app.example.com")
	if got := r.header.Get("Access-Control-Allow-Methods"); got != "GET, POST, OPTIONS" {
		t.Errorf("a GET endpoint's preflight allows %q; the callable form needs POST", got)
	}
	for _, hdr := range []string{"Authorization", "Content-Type", "Idempotency-Key", "X-Firebase-AppCheck", "Firebase-Instance-ID-Token"} {
		if !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), hdr) {
			t.Errorf("preflight does not allow %s", hdr)
		}
	}
}

func TestAuthentication(t *testing.T) {
	e := &Edge{Logger: quietLogger(), AuthRequired: true}
	c := &checks{auth: func() (Authenticator, error) {
		return func(_ context.Context, r *http.Request) (Caller, error) {
			if r.Header.Get("Authorization") != "Bearer good" {
				return Caller{}, errs.New(errs.Unauthenticated, "bad token")
			}
			return Caller{UID: "uid-1"}, nil
		}, nil
	}}
	h := serve(e, c, Endpoint{Name: "x", Method: "POST", Public: true, MaxBody: 1024}, echo)
	if r := call(h, "POST", "/x", ctJSON, `{}`); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d %s", r.status, r.body)
	}
	if r := call(h, "POST", "/x", ctJSON, `{"data":{}}`); r.status != 401 || r.code != "UNAUTHENTICATED" {
		t.Errorf("callable without a token: %d %s", r.status, r.body)
	}
	if r := call(h, "POST", "/x", ctJSON, `{}`, "Authorization", "Bearer good"); r.status != 201 || !strings.Contains(r.body, "uid-1") {
		t.Errorf("good token: %d %s", r.status, r.body)
	}
	// An authenticator that cannot be built is a 503, through the edge.
	c.auth = func() (Authenticator, error) { return nil, errs.Retryable(nil, time.Second, "cannot check tokens") }
	if r := call(h, "POST", "/x", ctJSON, `{}`); r.status != 503 || r.header.Get("Retry-After") != "1" {
		t.Errorf("authenticator unavailable: %d %s", r.status, r.body)
	}
}

// TestAuthOffChecksTokensThatAreSent: with AUTH=off every caller is an
// admin, and a token that is sent still names the caller (unique counters
// need to know who it is), or is refused.
func TestAuthOffChecksTokensThatAreSent(t *testing.T) {
	e := &Edge{Logger: quietLogger()}
	c := &checks{auth: func() (Authenticator, error) {
		return func(_ context.Context, r *http.Request) (Caller, error) {
			if r.Header.Get("Authorization") != "Bearer good" {
				return Caller{}, errs.New(errs.Unauthenticated, "bad token")
			}
			return Caller{UID: "uid-1"}, nil
		}, nil
	}}
	var got *Request
	h := serve(e, c, Endpoint{Name: "x", Method: "POST", Public: true, MaxBody: 1024}, func(_ context.Context, r *Request) (int, any, error) {
		got = r
		return 200, map[string]string{}, nil
	})
	if r := call(h, "POST", "/x", ctJSON, `{}`); r.status != 200 || got.User != "" || !got.Admin {
		t.Errorf("no token: %d, user %q admin %v", r.status, got.User, got.Admin)
	}
	if r := call(h, "POST", "/x", ctJSON, `{}`, "Authorization", "Bearer good"); r.status != 200 || got.User != "uid-1" || !got.Admin {
		t.Errorf("a good token: %d, user %q admin %v", r.status, got.User, got.Admin)
	}
	if r := call(h, "POST", "/x", ctJSON, `{}`, "Authorization", "Bearer bad"); r.status != 401 {
		t.Errorf("a bad token: %d %s", r.status, r.body)
	}
}

// TestStalledTokenCheckIsA503: a token check that hangs (a stalled fetch of
// Google's public keys) is bounded by the request's deadline and answers
// 503 with Retry-After, instead of holding the request.
func TestStalledTokenCheckIsA503(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := &Edge{Logger: quietLogger(), AuthRequired: true, Deadline: 50 * time.Millisecond}
	h := serve(e, &checks{auth: func() (Authenticator, error) {
		return func(context.Context, *http.Request) (Caller, error) {
			<-release // ignores its context, as a lock held by a stalled fetch does
			return Caller{UID: "late"}, nil
		}, nil
	}}, Endpoint{Name: "x", Method: "POST", Public: true, MaxBody: 1024}, echo)
	start := time.Now()
	r := call(h, "POST", "/x", ctJSON, `{}`, "Authorization", "Bearer any")
	if r.status != 503 || r.header.Get("Retry-After") == "" || time.Since(start) > 2*time.Second {
		t.Errorf("stalled token check: %d %s after %s", r.status, r.body, time.Since(start))
	}
}

func TestDeadline(t *testing.T) {
	e := &Edge{Logger: quietLogger(), Deadline: 20 * time.Millisecond}
	h := serve(e, nil, Endpoint{Name: "x", Method: "GET"}, func(ctx context.Context, _ *Request) (int, any, error) {
		<-ctx.Done()
		return 0, nil, errs.Retryable(ctx.Err(), time.Second, "Firestore did not answer in time; retry")
	})
	start := time.Now()
	if r := call(h, "GET", "/x", "", ""); r.status != 503 || time.Since(start) > time.Second {
		t.Errorf("%d after %s", r.status, time.Since(start))
	}
}

func TestInternalErrorsAreNotShown(t *testing.T) {
	e := &Edge{Logger: quietLogger()}
	h := serve(e, nil, Endpoint{Name: "x", Method: "GET", Public: true, MaxBody: 100}, func(context.Context, *Request) (int, any, error) {
		return 0, nil, io.ErrUnexpectedEOF
	})
	for _, r := range []result{call(h, "GET", "/x", "", ""), call(h, "POST", "/x", ctJSON, `{"data":{}}`)} {
		if r.status != 500 || strings.Contains(r.body, "EOF") || !strings.Contains(r.body, `"INTERNAL"`) {
			t.Errorf("internal error shown as %d %s", r.status, r.body)
		}
	}
}

// FuzzEdge sends arbitrary methods, bodies and headers through the shared
// edge: it must never panic nor answer 5xx, and errors must be JSON.
func FuzzEdge(f *testing.F) {
	f.Add("POST", []byte(`{"name":"a","inner":{"list":["x"]}}`), "https://app.example.com", "Bearer x")
	f.Add("OPTIONS", []byte{}, "https://evil.example.com", "")
	f.Add("POST", []byte(`[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`), "", "")
	f.Add("POST", []byte(`{"data":{"count":1}}`), "", "")
	f.Add("POST", []byte(`{"data":{"count":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3"},"n":[2.0,{"@type":"type.googleapis.com/google.protobuf.UInt64Value","value":"9"}]}}`), "", "")
	h := testEdge(http.MethodPost)
	f.Fuzz(func(t *testing.T, method string, b []byte, origin, authz string) {
		req, err := http.NewRequest(method, "http://x/test", bytes.NewReader(b))
		if err != nil {
			return // not a request net/http would pass on
		}
		req.Header.Set("Content-Type", ctJSON)
		req.Header.Set("Origin", origin)
		req.Header.Set("Authorization", authz)
		rec := httptest.NewRecorder()
		h(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q %q", rec.Code, method, b)
		}
		if rec.Code >= 400 {
			var e struct {
				Error struct{ Code, Status string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code+e.Error.Status == "" {
				t.Fatalf("error body %q", rec.Body)
			}
		}
	})
}

// TestPanicIsAnInternalError: a handler's bug answers INTERNAL in the
// caller's protocol (the SDKs parse it) instead of a dropped connection or
// the framework's plain-text 500, and its log line holds the stack.
func TestPanicIsAnInternalError(t *testing.T) {
	var logs bytes.Buffer
	e := &Edge{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	h := serve(e, nil, Endpoint{Name: "x", Method: "GET", Public: true, MaxBody: 100}, func(context.Context, *Request) (int, any, error) {
		panic("a bug in the handler")
	})
	for _, r := range []result{call(h, "GET", "/x", "", ""), call(h, "POST", "/x", ctJSON, `{"data":{}}`)} {
		if r.status != 500 || r.code != "INTERNAL" || strings.Contains(r.body, "a bug") {
			t.Errorf("a panic answered %d %s", r.status, r.body)
		}
	}
	if !strings.Contains(logs.String(), "a bug in the handler") || !strings.Contains(logs.String(), "edge_test.go") {
		t.Errorf("the panic and its stack are not logged:\n%s", logs.String())
	}
}

// TestLogLinesAreBounded: a request's log line takes at most 512 bytes of
// each thing the client sent (a 1 MB User-Agent, a long URL), even on a
// 401 before anything else.
func TestLogLinesAreBounded(t *testing.T) {
	var logs bytes.Buffer
	e := &Edge{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), AuthRequired: true}
	h := serve(e, &checks{auth: func() (Authenticator, error) {
		return func(context.Context, *http.Request) (Caller, error) {
			return Caller{}, errs.New(errs.Unauthenticated, "bad token")
		}, nil
	}}, Endpoint{Name: "x", Method: "GET", Public: true, MaxBody: 100}, echo)
	huge := strings.Repeat("é", 500_000)
	r := call(h, "GET", "/x?q="+strings.Repeat("a", 100_000), "", "", "User-Agent", huge, "Authorization", "Bearer x")
	if r.status != 401 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if n := logs.Len(); n > 4<<10 {
		t.Errorf("a request's log line is %d bytes", n)
	}
	if !strings.Contains(logs.String(), "…") {
		t.Errorf("no cut is marked: %.300s", logs.String())
	}
}

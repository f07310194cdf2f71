package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/errs"
)

type body struct {
	Name  *string `json:"name"`
	Count *int64  `json:"count"`
	Inner *struct {
		List []string `json:"list"`
	} `json:"inner"`
}

func testEdge() http.HandlerFunc {
	e := &Edge{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Origins: []string{"https://app.example.com"}}
	return e.Handler(Endpoint{Name: "test", Method: http.MethodPost, Public: true,
		Handle: func(w http.ResponseWriter, r *http.Request, req *Request) (int, any, error) {
			var b body
			if err := DecodeJSON(w, r, 1<<10, &b); err != nil {
				return 0, nil, err
			}
			if b.Count != nil && *b.Count < 0 {
				return 0, nil, errs.Invalid("count", "must not be negative")
			}
			return http.StatusOK, map[string]bool{"ok": true}, nil
		}})
}

func TestEdge(t *testing.T) {
	h := testEdge()
	for _, tc := range []struct {
		method, body, origin string
		status               int
		code                 errs.Code
		allowOrigin          string
	}{
		{"POST", `{"name":"a","count":1}`, "", 200, "", ""},
		{"POST", `{"count":-1}`, "", 400, errs.InvalidArgument, ""},
		{"POST", `{"nope":1}`, "", 400, errs.InvalidArgument, ""},
		{"POST", `{"count":"1"}`, "", 400, errs.InvalidArgument, ""},
		{"POST", `{"name":"` + strings.Repeat("x", 2000) + `"}`, "", 413, errs.PayloadTooLarge, ""},
		{"GET", ``, "", 405, errs.MethodNotAllowed, ""},
		{"OPTIONS", ``, "https://app.example.com", 204, "", "https://app.example.com"},
		{"OPTIONS", ``, "https://evil.example.com", 403, errs.PermissionDenied, ""},
		{"POST", `{"name":"a"}`, "https://app.example.com", 200, "", "https://app.example.com"},
		{"POST", `{"name":"a"}`, "https://evil.example.com", 200, "", ""},
	} {
		req := httptest.NewRequest(tc.method, "/test", strings.NewReader(tc.body))
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		rec := httptest.NewRecorder()
		h(rec, req)
		var e ErrorBody
		json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != tc.status || e.Error.Code != tc.code || rec.Header().Get("Access-Control-Allow-Origin") != tc.allowOrigin {
			t.Errorf("%s %.40s from %q: %d %s (ACAO %q), want %d %s (ACAO %q)", tc.method, tc.body, tc.origin,
				rec.Code, rec.Body, rec.Header().Get("Access-Control-Allow-Origin"), tc.status, tc.code, tc.allowOrigin)
		}
	}
}

func TestInternalErrorsAreNotShown(t *testing.T) {
	e := &Edge{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	h := e.Handler(Endpoint{Name: "x", Method: "GET", Handle: func(http.ResponseWriter, *http.Request, *Request) (int, any, error) {
		return 0, nil, io.ErrUnexpectedEOF
	}})
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "EOF") || !strings.Contains(rec.Body.String(), `"INTERNAL"`) {
		t.Errorf("internal error shown as %d %s", rec.Code, rec.Body)
	}
}

// FuzzEdge sends arbitrary methods, bodies and headers through the shared
// edge: it must never panic nor answer 5xx, and errors must be JSON.
func FuzzEdge(f *testing.F) {
	f.Add("POST", []byte(`{"name":"a","inner":{"list":["x"]}}`), "https://app.example.com", "Bearer x")
	f.Add("OPTIONS", []byte{}, "https://evil.example.com", "")
	f.Add("POST", []byte(`[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`), "", "")
	h := testEdge()
	f.Fuzz(func(t *testing.T, method string, b []byte, origin, authz string) {
		req, err := http.NewRequest(method, "http://x/test", bytes.NewReader(b))
		if err != nil {
			return // not a request net/http would pass on
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Authorization", authz)
		rec := httptest.NewRecorder()
		h(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q %q", rec.Code, method, b)
		}
		if rec.Code >= 400 {
			var e ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" {
				t.Fatalf("error body %q", rec.Body)
			}
		}
	})
}

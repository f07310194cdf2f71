// Package httpapi is the HTTP edge shared by every function: CORS, method
// checks, authentication, strict JSON decoding, the one table that maps error
// codes to statuses, buffered JSON responses, and one log line per request.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
)

// statusOf is the one mapping from error codes to HTTP statuses.
var statusOf = map[errs.Code]int{
	errs.InvalidArgument:   http.StatusBadRequest,
	errs.Unauthenticated:   http.StatusUnauthorized,
	errs.PermissionDenied:  http.StatusForbidden,
	errs.NotFound:          http.StatusNotFound,
	errs.MethodNotAllowed:  http.StatusMethodNotAllowed,
	errs.AlreadyExists:     http.StatusConflict,
	errs.PayloadTooLarge:   http.StatusRequestEntityTooLarge,
	errs.ResourceExhausted: http.StatusTooManyRequests,
	errs.Unavailable:       http.StatusServiceUnavailable,
	errs.Internal:          http.StatusInternalServerError,
}

// Status returns the HTTP status for an error's code.
func Status(err error) int {
	if s, ok := statusOf[errs.CodeOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON shape of every error response.
type ErrorBody struct {
	Error struct {
		Code    errs.Code `json:"code"`
		Message string    `json:"message"`
	} `json:"error"`
}

// Request describes the request being served, for the handler and for the
// request's log line.
type Request struct {
	Function  string
	User      string // Firebase uid; empty when AUTH=off
	CounterID string
}

// Handle serves one decoded request: it returns the success status and body,
// or an error whose code picks the status.
type Handle func(w http.ResponseWriter, r *http.Request, req *Request) (int, any, error)

// Endpoint is one HTTP function.
type Endpoint struct {
	Name   string
	Method string // GET or POST; OPTIONS is answered for CORS
	// Public endpoints authenticate their callers (Edge.Authenticate);
	// private ones are protected by IAM where they are deployed.
	Public bool
	Handle Handle
}

// Authenticator returns the uid of the request's caller or an
// UNAUTHENTICATED error.
type Authenticator func(ctx context.Context, r *http.Request) (string, error)

// Edge holds what every endpoint shares.
type Edge struct {
	Logger    *slog.Logger
	ProjectID string // for trace ids in logs
	// Origins are the CORS origins allowed; "*" allows any.
	Origins []string
	// Authenticate is nil when authentication is off (AUTH=off).
	Authenticate Authenticator
}

// Handler wraps an endpoint with the shared edge behaviour.
func (e *Edge) Handler(ep Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		req := &Request{Function: ep.Name}
		log := e.Logger.With(attrsAny(logging.TraceAttrs(r, e.ProjectID))...)
		r = r.WithContext(logging.WithLogger(r.Context(), log))

		status, err := e.serve(w, r, ep, req)

		level := slog.LevelInfo
		attrs := []slog.Attr{
			slog.String("function", req.Function),
			slog.Int("status", status),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
		}
		if req.CounterID != "" {
			attrs = append(attrs, slog.String("counter_id", req.CounterID))
		}
		if req.User != "" {
			attrs = append(attrs, slog.String("user", req.User))
		}
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
			if status >= 500 {
				level = slog.LevelError
			}
		}
		attrs = append(attrs, slog.Group("httpRequest",
			slog.String("requestMethod", r.Method),
			slog.String("requestUrl", r.URL.RequestURI()),
			slog.Int("status", status),
			slog.String("latency", fmt.Sprintf("%.6fs", time.Since(start).Seconds())),
			slog.String("userAgent", r.UserAgent()),
		))
		log.LogAttrs(r.Context(), level, "request", attrs...)
	}
}

func (e *Edge) serve(w http.ResponseWriter, r *http.Request, ep Endpoint, req *Request) (int, error) {
	if origin := r.Header.Get("Origin"); origin != "" {
		allowed := e.allowOrigin(origin)
		if allowed != "" {
			w.Header().Set("Access-Control-Allow-Origin", allowed)
			w.Header().Set("Access-Control-Expose-Headers", "Retry-After, Idempotent-Replayed")
		}
		w.Header().Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			if allowed == "" {
				return WriteError(w, errs.New(errs.PermissionDenied, "origin %q is not allowed (CORS_ORIGINS)", origin))
			}
			w.Header().Set("Access-Control-Allow-Methods", ep.Method+", OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key")
			w.Header().Set("Access-Control-Max-Age", "3600")
			w.WriteHeader(http.StatusNoContent)
			return http.StatusNoContent, nil
		}
	}
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", ep.Method+", OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, nil
	}
	if r.Method != ep.Method {
		w.Header().Set("Allow", ep.Method+", OPTIONS")
		return WriteError(w, errs.New(errs.MethodNotAllowed, "%s accepts %s, not %s", ep.Name, ep.Method, r.Method))
	}
	if e.Authenticate != nil && ep.Public {
		uid, err := e.Authenticate(r.Context(), r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="firebase"`)
			return WriteError(w, err)
		}
		req.User = uid
	}
	status, body, err := ep.Handle(w, r, req)
	if err != nil {
		return WriteError(w, err)
	}
	return WriteJSON(w, status, body)
}

func (e *Edge) allowOrigin(origin string) string {
	if slices.Contains(e.Origins, "*") {
		return "*"
	}
	if slices.Contains(e.Origins, strings.TrimSuffix(origin, "/")) {
		return origin
	}
	return ""
}

// WriteJSON renders body into a buffer first, so a failed encode never sends
// half a response, then writes it with status.
func WriteJSON(w http.ResponseWriter, status int, body any) (int, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(body); err != nil {
		return WriteError(w, fmt.Errorf("encode response: %w", err))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return status, nil
}

// WriteError writes err as {"error": {"code", "message"}}. Internal errors
// are shown as a generic message; their detail goes to the log only. It
// returns the status written and err, for the request's log line.
func WriteError(w http.ResponseWriter, err error) (int, error) {
	var body ErrorBody
	body.Error.Code = errs.CodeOf(err)
	body.Error.Message = "internal error"
	if e, ok := clientError(err); ok {
		body.Error.Message = e.Message
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(1, e.RetryAfter.Round(time.Second)/time.Second))))
		}
	}
	status := Status(err)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(body) // cannot fail: two strings
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return status, err
}

// clientError returns the *errs.Error a client may see, if err holds one.
func clientError(err error) (*errs.Error, bool) {
	e, ok := errors.AsType[*errs.Error](err)
	if !ok || e.Code == errs.Internal {
		return nil, false
	}
	return e, true
}

func attrsAny(attrs []slog.Attr) []any {
	out := make([]any, len(attrs))
	for i, a := range attrs {
		out[i] = a
	}
	return out
}

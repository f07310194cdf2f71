// Package httpapi is the HTTP edge shared by every function: CORS, methods,
// content types, authentication, strict JSON, the Firebase callable
// protocol next to the plain JSON API, the one table that maps error codes
// to statuses, buffered JSON responses, a deadline on the request's work,
// and one log line per request.
//
// # Two protocols on one URL
//
// A plain request is a GET with a query string or a POST with a JSON
// object; it answers the object, or {"error": {"code", "message"}}.
//
// A callable request (https://firebase.google.com/docs/functions/callable-reference,
// what httpsCallable in the Firebase SDKs sends) is a POST whose JSON body
// has exactly one member, "data"; it answers {"result": …} or {"error":
// {"status", "message", "details"}} with the status names and HTTP codes
// of google.rpc.Code. Handlers see neither: Request.Decode reads the plain
// body, the query string or the callable data into the same struct.
package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
)

// Request is one decoded request as a handler sees it.
type Request struct {
	Function string
	// User is the caller's Firebase uid; empty when no token was sent
	// (possible with AUTH=off only).
	User string
	// Anonymous is true for users of Firebase anonymous sign-in.
	Anonymous bool
	// Admin is true for a token with the custom claim admin: true, and for
	// every caller with AUTH=off.
	Admin bool
	// ClientAddr is the caller's network address, for budgets: the last
	// X-Forwarded-For hop when deployed (the one Google's front end
	// writes), the peer's address otherwise.
	ClientAddr string
	Callable   bool
	HTTP       *http.Request

	header http.Header // of the response
	input  []byte      // a JSON object: the plain body or the callable data
	query  url.Values  // a plain GET's parameters
}

// Decode reads the request's input into dst (a pointer to a struct with
// json tags), strictly; errors are INVALID_ARGUMENT and name the field.
func (r *Request) Decode(dst any) error {
	if r.input == nil {
		return UnmarshalQuery(r.query, dst)
	}
	return Unmarshal(r.input, dst)
}

// Header returns a header of the request.
func (r *Request) Header(name string) string { return r.HTTP.Header.Get(name) }

// SetHeader sets a header of the response.
func (r *Request) SetHeader(name, value string) { r.header.Set(name, value) }

// Handle serves one request: it returns the success status and body, or an
// error whose code picks the status. ctx carries the request's deadline and
// logger.
type Handle func(ctx context.Context, req *Request) (int, any, error)

// Endpoint is one HTTP function.
type Endpoint struct {
	Name   string
	Method string // GET or POST; OPTIONS is answered for CORS
	// Public endpoints authenticate their callers (Edge.Authenticate) and
	// speak the callable protocol too; private ones are protected by IAM
	// where they are deployed.
	Public  bool
	MaxBody int64
	// Deadline bounds the handler's work instead of Edge.Deadline, when set.
	Deadline time.Duration
	Handle   Handle
}

// Caller is who sent a request, from its Firebase ID token.
type Caller struct {
	UID       string
	Anonymous bool // signed in with Firebase anonymous sign-in
	Admin     bool // the token carries the custom claim admin: true
}

// Authenticator returns the caller of a request that carries an
// Authorization header, or an UNAUTHENTICATED error.
type Authenticator func(ctx context.Context, r *http.Request) (Caller, error)

// Edge holds what every endpoint shares.
type Edge struct {
	Logger    *slog.Logger
	ProjectID string // for trace ids in logs
	// Origins are the CORS origins allowed; "*" allows any.
	Origins []string
	// Authenticate returns the token checker of public endpoints. It is
	// looked up per request, so it may be built lazily; nil: none.
	Authenticate func() (Authenticator, error)
	// AuthRequired makes a public endpoint refuse a request without a
	// token. Otherwise (AUTH=off) a token that is sent is still checked
	// and names the caller, and every caller is an admin.
	AuthRequired bool
	// Deployed takes the client's address from X-Forwarded-For.
	Deployed bool
	// Deadline bounds a handler's work (its Firestore calls), and the
	// check of its caller's token.
	Deadline time.Duration
}

// allowedHeaders are the request headers browsers may send: ours, and the
// ones the Firebase callable SDKs add.
const allowedHeaders = "Authorization, Content-Type, Idempotency-Key, X-Firebase-AppCheck, Firebase-Instance-ID-Token"

// Handler wraps an endpoint with the shared edge behaviour.
func (e *Edge) Handler(ep Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := logging.NewContext(r.Context(), e.Logger.With(attrsAny(logging.TraceAttrs(r, e.ProjectID))...))
		r = r.WithContext(ctx)
		req := &Request{Function: ep.Name, HTTP: r, header: w.Header()}

		status, err := e.serve(w, r, ep, req)

		level := slog.LevelInfo
		attrs := []slog.Attr{
			slog.String("function", ep.Name),
			slog.Int("status", status),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
		}
		if req.Callable {
			attrs = append(attrs, slog.String("protocol", "callable"))
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
		logging.FromContext(ctx).LogAttrs(ctx, level, "request", attrs...)
	}
}

func (e *Edge) serve(w http.ResponseWriter, r *http.Request, ep Endpoint, req *Request) (int, error) {
	methods := ep.Method
	if ep.Public && ep.Method != http.MethodPost {
		methods += ", POST" // the callable form
	}
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
			w.Header().Set("Access-Control-Allow-Methods", methods+", OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", allowedHeaders)
			w.Header().Set("Access-Control-Max-Age", "3600")
			w.WriteHeader(http.StatusNoContent)
			return http.StatusNoContent, nil
		}
	}
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", methods+", OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, nil
	}
	notAllowed := func(hint string) (int, error) {
		w.Header().Set("Allow", methods+", OPTIONS")
		return WriteError(w, errs.New(errs.MethodNotAllowed, "%s accepts %s, not %s%s", ep.Name, ep.Method, r.Method, hint))
	}

	switch {
	case r.Method == http.MethodGet && ep.Method == http.MethodGet:
		req.query = r.URL.Query()
	case r.Method == http.MethodPost:
		if err := e.readBody(w, r, ep, req); err != nil {
			if errs.Is(err, errs.MethodNotAllowed) {
				return notAllowed(" (a POST must be a callable request, {\"data\": {…}})")
			}
			return WriteError(w, err)
		}
	default:
		return notAllowed("")
	}

	fail := WriteError
	if req.Callable {
		fail = writeCallableError
	}
	ctx := r.Context()
	if d := cmp.Or(ep.Deadline, e.Deadline); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	req.ClientAddr = clientAddr(r, e.Deployed)
	if ep.Public {
		if err := e.identify(ctx, req); err != nil {
			if errs.Is(err, errs.Unauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="firebase"`)
			}
			return fail(w, err)
		}
	}
	status, body, err := handle(ctx, ep, req)
	switch {
	case err != nil:
		return fail(w, err)
	case req.Callable:
		return writeCallableResult(w, body)
	}
	return WriteJSON(w, status, body)
}

// identify sets the request's caller from its token, within ctx's
// deadline: a token check that would outlast it (a stalled fetch of
// Google's public keys, which holds a lock every check needs) answers 503
// instead, and leaves the check to finish on its own.
func (e *Edge) identify(ctx context.Context, req *Request) error {
	if !e.AuthRequired && req.HTTP.Header.Get("Authorization") == "" {
		req.Admin = true // AUTH=off: anyone may do anything
		return nil
	}
	var authenticate Authenticator
	if e.Authenticate != nil {
		a, err := e.Authenticate()
		if err != nil {
			return err
		}
		authenticate = a
	}
	if authenticate == nil {
		return errs.New(errs.Unauthenticated, "this function checks no tokens (its authentication is not set up)")
	}
	type checked struct {
		caller Caller
		err    error
	}
	done := make(chan checked, 1)
	go func() {
		c, err := authenticate(ctx, req.HTTP)
		done <- checked{c, err}
	}()
	var c checked
	select {
	case c = <-done:
	case <-ctx.Done():
		return errs.Retryable(ctx.Err(), time.Second, "cannot check ID tokens right now; retry shortly")
	}
	if c.err != nil {
		return c.err
	}
	req.User, req.Anonymous, req.Admin = c.caller.UID, c.caller.Anonymous, c.caller.Admin || !e.AuthRequired
	logging.Annotate(ctx, "user", c.caller.UID)
	return nil
}

// clientAddr is the address budgets count a request under: the last
// X-Forwarded-For hop when deployed (Cloud Run sets the header to the
// connecting client's address; a proxy in front would append to it, so
// the last hop is never one the client wrote), the peer otherwise.
func clientAddr(r *http.Request, deployed bool) string {
	if deployed {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if last := strings.TrimSpace(hops[len(hops)-1]); last != "" {
				return last
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// handle runs ep's handler. A panic, a bug, becomes an unclassified error:
// the caller gets INTERNAL in its protocol and the request its log line,
// here with the stack.
func handle(ctx context.Context, ep Endpoint, req *Request) (status int, body any, err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			panic(p) // net/http's way to abort a response on purpose
		}
		logging.FromContext(ctx).Error("panic", "function", ep.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		err = fmt.Errorf("panic in %s: %v", ep.Name, p)
	}()
	return ep.Handle(ctx, req)
}

// readBody reads a POST body: a JSON object for a POST endpoint, or a
// callable request ({"data": …}) for any public endpoint.
func (e *Edge) readBody(w http.ResponseWriter, r *http.Request, ep Endpoint, req *Request) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		if ep.Method != http.MethodPost {
			return errs.New(errs.MethodNotAllowed, "not a callable request")
		}
		return &errs.Error{Code: errs.UnsupportedMediaType, Field: "Content-Type",
			Message: fmt.Sprintf("Content-Type must be application/json, not %q", r.Header.Get("Content-Type"))}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, ep.MaxBody))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return errs.New(errs.PayloadTooLarge, "request body must be at most %d bytes", ep.MaxBody)
	}
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "request body could not be read")
	}
	if data, ok := callableData(body); ok && ep.Public {
		req.Callable, req.input = true, unwrapIntegers(data)
		return nil
	}
	if ep.Method != http.MethodPost {
		return errs.New(errs.MethodNotAllowed, "not a callable request")
	}
	req.input = body
	return nil
}

// callableData returns the data of a callable request, whose body is an
// object with exactly one member, "data". Calling with no argument sends
// null, which reads as {}.
func callableData(body []byte) ([]byte, bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || checkDepth(trimmed, MaxDepth+1) != nil {
		return nil, false
	}
	var envelope map[string]jsontext.Value
	if json.Unmarshal(trimmed, &envelope) != nil || len(envelope) != 1 {
		return nil, false
	}
	data, ok := envelope["data"]
	if !ok {
		return nil, false
	}
	if data.Kind() == 'n' {
		return []byte("{}"), true
	}
	return data, true
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

func attrsAny(attrs []slog.Attr) []any {
	out := make([]any, len(attrs))
	for i, a := range attrs {
		out[i] = a
	}
	return out
}

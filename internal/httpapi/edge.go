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
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardcount/shardcount/internal/clientaddr"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
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
	// IssuedAt is when the caller's ID token was issued (zero: none).
	IssuedAt time.Time
	// ClientAddr is the caller's network address, for budgets
	// (Proxies.ClientAddr).
	ClientAddr string
	// AppID is the Firebase app of a valid App Check token, if any;
	// AppToken a digest of that token, whose budgets the call spends too;
	// OneUse is true when it was a limited-use token, consumed by this
	// call.
	AppID    string
	AppToken string
	OneUse   bool
	// appToConsume is the app of a verified App Check token to consume
	// once the caller's budget paid for the call.
	appToConsume string
	Callable     bool
	HTTP         *http.Request

	header http.Header // of the response
	input  []byte      // a JSON object: the plain body or the callable data
	query  url.Values  // a plain GET's parameters
}

// Decode reads the request's input into dst (a pointer to a struct with
// json tags), strictly; errors are INVALID_ARGUMENT and name the field.
func (r *Request) Decode(dst any) error {
	switch {
	case r.input == nil:
		return UnmarshalQuery(r.query, dst)
	case r.Callable:
		return unmarshal(r.input, dst, callableIntegers)
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

// Backend is the service behind the edge, which the edge calls through
// this one interface; each method may fail with a retryable error (a
// service built on first use that cannot start yet).
type Backend interface {
	// Authenticator returns the checker of ID tokens.
	Authenticator() (Authenticator, error)
	// AppVerifier returns the checker of App Check tokens, within ctx.
	AppVerifier(ctx context.Context) (AppVerifier, error)
	// Admit runs once a public function's caller is known and before the
	// request's body is parsed: it spends the caller's budget for a call,
	// so what a caller sends costs it before it costs us.
	Admit(ctx context.Context, req *Request) error
	// Handle serves the function req.Function.
	Handle(ctx context.Context, req *Request) (int, any, error)
}

// Endpoint is one HTTP function.
type Endpoint struct {
	Name   string
	Method string // GET or POST; OPTIONS is answered for CORS
	// Public endpoints authenticate their callers (Backend.Authenticator) and
	// speak the callable protocol too; private ones are protected by IAM
	// where they are deployed.
	Public  bool
	MaxBody int64
	// Deadline bounds the handler's work instead of Edge.Deadline, when set.
	Deadline time.Duration
}

// Edge holds what every endpoint shares.
type Edge struct {
	Logger    *slog.Logger
	ProjectID string // for trace ids in logs
	// Origins are the CORS origins allowed; "*" allows any.
	Origins []string
	// Backend serves the endpoints, and checks their callers.
	Backend Backend
	// AuthRequired makes a public endpoint refuse a request without a
	// token. Otherwise (AUTH=off) a token that is sent is still checked
	// and names the caller, and every caller is an admin.
	AuthRequired bool
	// Deployed takes the client's address from X-Forwarded-For, behind
	// Proxies.
	Deployed bool
	Proxies  clientaddr.Proxies
	// AppCheck checks the App Check tokens of public endpoints; nil: off.
	AppCheck *AppCheck
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
		ctx := logging.NewRequestContext(r, e.Logger, e.ProjectID)
		r = r.WithContext(ctx)
		req := &Request{Function: ep.Name, HTTP: r, header: w.Header()}

		status, err := e.serve(w, r, ep, req)
		CountRefusal(ctx, ep.Name, status)

		level := slog.LevelInfo
		if err != nil && status >= 500 {
			level = slog.LevelError
		}
		if !logging.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("function", ep.Name),
			slog.Int("status", status),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
		}
		if req.Callable {
			attrs = append(attrs, slog.String("protocol", "callable"))
		}
		if err != nil {
			attrs = append(attrs, slog.String("error", capped(err.Error())))
		}
		attrs = append(attrs, slog.Group("httpRequest",
			slog.String("requestMethod", capped(r.Method)),
			slog.String("requestUrl", capped(r.URL.RequestURI())),
			slog.Int("status", status),
			slog.String("latency", fmt.Sprintf("%.6fs", time.Since(start).Seconds())),
			slog.String("userAgent", capped(r.UserAgent())),
		))
		logging.FromContext(ctx).LogAttrs(ctx, level, "request", attrs...)
	}
}

func (e *Edge) serve(w http.ResponseWriter, r *http.Request, ep Endpoint, req *Request) (int, error) {
	methods := ep.Method
	if ep.Public && ep.Method != http.MethodPost {
		methods += ", POST" // the callable form
	}
	if status, done := e.preflight(w, r, methods); done {
		return status, nil
	}
	notAllowed := func(hint string) (int, error) {
		w.Header().Set("Allow", methods+", OPTIONS")
		return WriteError(w, errs.New(errs.MethodNotAllowed, "%s accepts %s, not %s%s", ep.Name, ep.Method, errs.Prefix(r.Method), hint))
	}
	const callableHint = " (a POST must be a callable request, {\"data\": {…}})"

	// The edge's checks have a span of their own, ended when the
	// function's work begins; only in a recorded request's trace (a
	// sampler decides a child as it decided its parent, so starting one
	// under an unsampled request would only cost).
	edge := trace.SpanFromContext(context.Background()) // a no-op span
	if trace.SpanFromContext(r.Context()).IsRecording() {
		_, edge = tracer.Start(r.Context(), "edge")
	}
	defer edge.End() // when a check answers; ending twice is a no-op

	// The cheapest checks come first, each before the work of the next:
	// the method and the content type, the size the request declares, the
	// caller's ID token and App Check token (both in its headers), the
	// caller's budget for a call, and only then its body, read and parsed:
	// a request refused before leaves its body unread, and its connection
	// is closed rather than drained.
	// Before the body is read, a public function's caller may be a
	// callable SDK or a plain client: its errors take both shapes.
	early := WriteError
	if ep.Public {
		early = writeEarlyError
	}
	post := false
	switch {
	case r.Method == http.MethodGet && ep.Method == http.MethodGet:
	case r.Method == http.MethodPost && (ep.Method == http.MethodPost || ep.Public):
		if !isJSON(r) {
			if ep.Method != http.MethodPost {
				return notAllowed(callableHint)
			}
			return early(w, &errs.Error{Code: errs.UnsupportedMediaType, Field: "Content-Type",
				Message: fmt.Sprintf("Content-Type must be application/json, not %q", errs.Prefix(r.Header.Get("Content-Type")))})
		}
		if r.ContentLength > ep.MaxBody {
			return early(w, tooLarge(ep.MaxBody))
		}
		post = true
	default:
		return notAllowed("")
	}
	refuse := func(err error) (int, error) {
		if post {
			w.Header().Set("Connection", "close") // the body stays unread
		}
		return early(w, err)
	}

	ctx := r.Context()
	if d := cmp.Or(ep.Deadline, e.Deadline); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	req.ClientAddr = e.Proxies.ClientAddr(r, e.Deployed)
	if ep.Public {
		if err := e.identify(ctx, req); err != nil {
			if errs.Is(err, errs.Unauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="firebase"`)
			}
			return refuse(err)
		}
		if err := e.checkApp(ctx, ep, req); err != nil {
			return refuse(err)
		}
	}
	ctx, led := ledger.New(ctx, req.Admin || !ep.Public)
	defer e.audit(ctx, led)
	if ep.Public {
		if err := e.Backend.Admit(ctx, req); err != nil {
			return refuse(err)
		}
	}
	if err := e.consumeApp(ctx, req); err != nil {
		return refuse(err)
	}
	var body []byte
	if post {
		var err error
		if d, ok := ctx.Deadline(); ok {
			// A body sent slowly holds its memory no longer than its call
			// may last, from a caller with a token too.
			_ = http.NewResponseController(w).SetReadDeadline(d) // a writer without deadlines (tests): the handler's own bound
		}
		if body, err = readBody(w, r, ep.MaxBody); err != nil {
			return early(w, err)
		}
	}

	switch data, callable := callableData(body); {
	case body == nil:
		req.query = r.URL.Query()
	case callable && ep.Public:
		req.Callable, req.input = true, data
	case ep.Method != http.MethodPost:
		return notAllowed(callableHint)
	default:
		req.input = body
	}
	fail := WriteError
	if req.Callable {
		fail = writeCallableError
	}
	edge.End()
	status, out, err := e.handle(ctx, ep, req)
	switch {
	case err != nil:
		return fail(w, err)
	case req.Callable:
		return writeCallableResult(w, out)
	}
	return WriteJSON(w, status, out)
}

// preflight sets the CORS headers of a browser's request and answers
// OPTIONS; done reports that the request is answered.
func (e *Edge) preflight(w http.ResponseWriter, r *http.Request, methods string) (status int, done bool) {
	if origin := r.Header.Get("Origin"); origin != "" {
		allowed := e.allowOrigin(origin)
		if allowed != "" {
			w.Header().Set("Access-Control-Allow-Origin", allowed)
			w.Header().Set("Access-Control-Expose-Headers", "Retry-After, Idempotent-Replayed")
		}
		w.Header().Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			if allowed == "" {
				status, _ := WriteError(w, errs.New(errs.PermissionDenied, "origin %q is not allowed (CORS_ORIGINS)", origin))
				return status, true
			}
			w.Header().Set("Access-Control-Allow-Methods", methods+", OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", allowedHeaders)
			w.Header().Set("Access-Control-Max-Age", "3600")
			w.WriteHeader(http.StatusNoContent)
			return http.StatusNoContent, true
		}
	}
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", methods+", OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, true
	}
	return 0, false
}

// audit logs a request that read Firestore before its caller's budget paid
// for it: a bug, never expected (internal/ledger).
func (e *Edge) audit(ctx context.Context, led *ledger.Ledger) {
	if n := led.Unbudgeted(); n > 0 {
		logging.FromContext(ctx).Error("reads without a budget spent", "reads", led.Reads(), "unbudgeted_reads", n)
	}
}

// handle runs ep's handler. A panic, a bug, becomes an unclassified error:
// the caller gets INTERNAL in its protocol and the request its log line,
// here with the stack.
func (e *Edge) handle(ctx context.Context, ep Endpoint, req *Request) (status int, body any, err error) {
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
	return e.Backend.Handle(ctx, req)
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

// maxLogged bounds what a request's log line takes from it (its URL, its
// user agent, an error that quotes it): a client sends up to a megabyte
// of headers, which must not become a megabyte a line.
const maxLogged = 512

// capped is s cut to maxLogged bytes, on a character's boundary, marked
// as cut.
func capped(s string) string {
	if len(s) <= maxLogged {
		return s
	}
	cut := maxLogged
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

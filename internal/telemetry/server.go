package telemetry

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The request's span and the standard HTTP server metric
// (docs/operations/observability.md). Hand-rolled rather than otelhttp's
// handler: that one cost about 7 µs of CPU a request here (a fifth of the
// whole request's, bench/README.md "Telemetry's cost"), computing
// attributes for every span whether sampled or not, and it records each
// caller's address and user agent, which a function answering the public
// should not keep. A function needs only what follows.
const scope = "github.com/shardcount/shardcount/internal/telemetry"

// Serve wraps function fn's handler: a server span named fn, continuing
// the caller's trace (the propagators Setup installs: traceparent, then
// X-Cloud-Trace-Context), with the method, route and status, and
// http.server.request.duration by the same three. It uses the providers
// set when it is called (Setup's).
func Serve(fn string, h http.HandlerFunc) http.HandlerFunc {
	tracer := otel.GetTracerProvider().Tracer(scope)
	duration, _ := otel.GetMeterProvider().Meter(scope).Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of HTTP server requests (the OpenTelemetry semantic convention), by function and status"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, fn, trace.WithSpanKind(trace.SpanKindServer))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			p := recover()
			status := sw.answered(p)
			if span.IsRecording() {
				span.SetAttributes(attribute.String("http.request.method", knownMethod(r.Method)), attribute.String("http.route", fn),
					attribute.String("url.scheme", scheme(r)))
				if status != 0 {
					span.SetAttributes(attribute.Int("http.response.status_code", status))
				}
				if e := errorType(status); e != "" {
					span.SetAttributes(attribute.String("error.type", e))
					span.SetStatus(codes.Error, e)
				}
			}
			span.End()
			duration.Record(ctx, time.Since(start).Seconds(), requestAttributes(fn, r.Method, scheme(r), status))
			if p != nil {
				panic(p)
			}
		}()
		h(sw, r.WithContext(ctx))
	}
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

// answered is the status the caller got, given what the handler panicked
// with (nil for none): the status written, if any; else a panic is a 500
// (functions-framework's recovery answers one), or, for
// http.ErrAbortHandler, none (0: the handler aborts on purpose; behind
// functions-framework the caller still gets its 500, but nothing here
// raises it).
func (w *statusWriter) answered(p any) int {
	switch {
	case p == nil || w.wroteHeader:
		return w.status
	case p == http.ErrAbortHandler:
		return 0
	}
	return http.StatusInternalServerError
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (Flush, deadlines) through this one.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// attributeSets keeps one measurement option per function, method and
// status: a handful, built once instead of on every request.
var attributeSets sync.Map

type requestKey struct {
	fn, method, scheme string
	status             int
}

// requestAttributes are the metric's attributes; status 0 (no answer) has
// none, and error.type says why.
func requestAttributes(fn, method, scheme string, status int) metric.MeasurementOption {
	key := requestKey{fn, knownMethod(method), scheme, status}
	if o, ok := attributeSets.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	attrs := []attribute.KeyValue{attribute.String("http.request.method", key.method),
		attribute.String("http.route", fn), attribute.String("url.scheme", scheme)}
	if status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	if e := errorType(status); e != "" {
		attrs = append(attrs, attribute.String("error.type", e))
	}
	o := metric.WithAttributeSet(attribute.NewSet(attrs...))
	attributeSets.Store(key, o)
	return o
}

// errorType is the semantic conventions' error.type of an answer: its
// status for a 5xx, "aborted" for none, else empty (a 4xx is the caller's).
func errorType(status int) string {
	switch {
	case status == 0:
		return "aborted"
	case status >= 500:
		return strconv.Itoa(status)
	}
	return ""
}

// scheme is the request's URL scheme: https behind Google's front end
// (which says so in X-Forwarded-Proto) or with TLS, else http.
func scheme(r *http.Request) string {
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		return "https"
	}
	return "http"
}

// knownMethod is method, or "_OTHER" (as the semantic conventions say) for
// a method a caller made up: callers must not choose our metrics' labels.
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodOptions, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return method
	}
	return "_OTHER"
}

package telemetry

import (
	"net/http"
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
			// A panic is a 500 here (net/http answers none, or drops the
			// connection), then goes on up.
			p := recover()
			if p != nil {
				sw.status = http.StatusInternalServerError
			}
			if span.IsRecording() {
				span.SetAttributes(attribute.String("http.request.method", knownMethod(r.Method)), attribute.String("http.route", fn),
					attribute.Int("http.response.status_code", sw.status))
				if sw.status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(sw.status))
				}
			}
			span.End()
			duration.Record(ctx, time.Since(start).Seconds(), requestAttributes(fn, r.Method, sw.status))
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
	fn, method string
	status     int
}

func requestAttributes(fn, method string, status int) metric.MeasurementOption {
	key := requestKey{fn, knownMethod(method), status}
	if o, ok := attributeSets.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(attribute.String("http.request.method", key.method),
		attribute.String("http.route", fn), attribute.Int("http.response.status_code", status)))
	attributeSets.Store(key, o)
	return o
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

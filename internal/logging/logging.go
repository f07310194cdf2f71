// Package logging writes log/slog JSON lines in the shape Cloud Logging reads
// from a function's stdout: "severity", "message", "time", and the trace keys
// that group a request's lines under its trace in the console.
package logging

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// Keys Cloud Logging lifts out of a JSON log line.
const (
	TraceKey   = "logging.googleapis.com/trace"
	SpanKey    = "logging.googleapis.com/spanId"
	SampledKey = "logging.googleapis.com/trace_sampled"
)

// Stdout writes to os.Stdout as it is at each write, so a logger made at
// init still follows a test that redirects the standard output later.
var Stdout io.Writer = stdout{}

type stdout struct{}

func (stdout) Write(p []byte) (int, error) { return os.Stdout.Write(p) }

// New returns a JSON logger writing to w.
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level:       level,
		ReplaceAttr: cloudKeys,
	}))
}

func cloudKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.MessageKey:
		a.Key = "message"
	case slog.LevelKey:
		a.Key = "severity"
		a.Value = slog.StringValue(severity(a.Value.Any().(slog.Level)))
	}
	return a
}

func severity(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARNING"
	}
	return "ERROR"
}

// TraceAttrs returns the trace keys for a request: its span's, when
// telemetry gave it one; else the caller's, read from the W3C traceparent
// header or, failing that, X-Cloud-Trace-Context. It returns nil when the
// request carries no trace or projectID is empty.
func TraceAttrs(r *http.Request, projectID string) []slog.Attr {
	if projectID == "" {
		return nil
	}
	// The request's own span, when telemetry is on; else the caller's ids.
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() && !sc.IsRemote() {
		return []slog.Attr{slog.String(TraceKey, "projects/"+projectID+"/traces/"+sc.TraceID().String()),
			slog.String(SpanKey, sc.SpanID().String()), slog.Bool(SampledKey, sc.IsSampled())}
	}
	traceID, spanID, sampled, ok := parseTraceparent(r.Header.Get("traceparent"))
	if !ok {
		traceID, spanID, sampled, ok = ParseCloudTrace(r.Header.Get("X-Cloud-Trace-Context"))
	}
	if !ok {
		return nil
	}
	attrs := []slog.Attr{slog.String(TraceKey, "projects/"+projectID+"/traces/"+traceID)}
	if spanID != "" {
		attrs = append(attrs, slog.String(SpanKey, spanID))
	}
	return append(attrs, slog.Bool(SampledKey, sampled))
}

// parseTraceparent reads "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
func parseTraceparent(h string) (traceID, spanID string, sampled, ok bool) {
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || !isHex(parts[1], 32) || !isHex(parts[2], 16) || !isHex(parts[3], 2) {
		return "", "", false, false
	}
	if strings.Trim(parts[1], "0") == "" {
		return "", "", false, false
	}
	flags, _ := strconv.ParseUint(parts[3], 16, 8)
	return parts[1], parts[2], flags&1 == 1, true
}

// ParseCloudTrace reads X-Cloud-Trace-Context, "TRACE_ID/SPAN_ID;o=1",
// SPAN_ID being decimal; it returns the ids in hex.
func ParseCloudTrace(h string) (traceID, spanID string, sampled, ok bool) {
	h = strings.TrimSpace(h)
	traceID, rest, _ := strings.Cut(h, "/")
	if !isHex(traceID, 32) {
		return "", "", false, false
	}
	span, opts, _ := strings.Cut(rest, ";")
	if n, err := strconv.ParseUint(span, 10, 64); err == nil {
		spanID = strconv.FormatUint(n, 16)
		spanID = strings.Repeat("0", 16-len(spanID)) + spanID
	}
	return strings.ToLower(traceID), spanID, opts == "o=1", true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

type ctxKey struct{}

// scope is the logger of one request or event. Handlers annotate it as they
// learn who the request is about (Annotate), and the request's closing log
// line is written through it, so every line of the request carries the same
// attributes. The attributes are given to the logger (which formats them)
// only when a line is written: at a level that writes none, a request
// formats none of them.
type scope struct {
	mu      sync.Mutex
	log     *slog.Logger
	pending []any // given to log at the next FromContext
}

// NewContext returns a context whose logger is l with args (key-value
// pairs, as slog.Logger.With takes them); FromContext returns it and
// Annotate adds to it.
func NewContext(ctx context.Context, l *slog.Logger, args ...any) context.Context {
	return context.WithValue(ctx, ctxKey{}, &scope{log: l, pending: slices.Clip(args)}) // Annotate's appends must not write into the caller's array
}

// NewRequestContext is NewContext for request r: its lines carry the
// request's trace keys (TraceAttrs) and then args.
func NewRequestContext(r *http.Request, l *slog.Logger, projectID string, args ...any) context.Context {
	trace := TraceAttrs(r, projectID)
	all := make([]any, 0, len(trace)+len(args))
	for _, a := range trace {
		all = append(all, a)
	}
	return NewContext(r.Context(), l, append(all, args...)...)
}

// FromContext returns the logger of ctx, with every annotation made so far,
// or slog.Default() when ctx carries none.
func FromContext(ctx context.Context) *slog.Logger {
	if s, ok := ctx.Value(ctxKey{}).(*scope); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.pending) > 0 {
			s.log, s.pending = s.log.With(s.pending...), nil
		}
		return s.log
	}
	return slog.Default()
}

// Enabled reports whether the logger of ctx writes lines at level, without
// formatting its annotations.
func Enabled(ctx context.Context, level slog.Level) bool {
	if s, ok := ctx.Value(ctxKey{}).(*scope); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.log.Enabled(ctx, level)
	}
	return slog.Default().Enabled(ctx, level)
}

// Annotate adds attributes (key-value pairs, as slog.Logger.With takes them)
// to the logger of ctx, for every later line of the same request.
func Annotate(ctx context.Context, args ...any) {
	if s, ok := ctx.Value(ctxKey{}).(*scope); ok {
		s.mu.Lock()
		s.pending = append(s.pending, args...)
		s.mu.Unlock()
	}
}

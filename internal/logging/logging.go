// Package logging writes log/slog JSON lines in the shape Cloud Logging reads
// from a function's stdout: "severity", "message", "time", and the trace keys
// that group a request's lines under its trace in the console.
package logging

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// Keys Cloud Logging lifts out of a JSON log line.
const (
	TraceKey   = "logging.googleapis.com/trace"
	SpanKey    = "logging.googleapis.com/spanId"
	SampledKey = "logging.googleapis.com/trace_sampled"
)

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

// TraceAttrs returns the trace keys for a request, read from the W3C
// traceparent header or, failing that, X-Cloud-Trace-Context. It returns nil
// when the request carries no trace or projectID is empty.
func TraceAttrs(r *http.Request, projectID string) []slog.Attr {
	if projectID == "" {
		return nil
	}
	traceID, spanID, sampled, ok := parseTraceparent(r.Header.Get("traceparent"))
	if !ok {
		traceID, spanID, sampled, ok = parseCloudTrace(r.Header.Get("X-Cloud-Trace-Context"))
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

// parseCloudTrace reads "TRACE_ID/SPAN_ID;o=1", SPAN_ID being decimal.
func parseCloudTrace(h string) (traceID, spanID string, sampled, ok bool) {
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

// WithLogger returns a context carrying l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// From returns the logger carried by ctx, or slog.Default().
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(ctxKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

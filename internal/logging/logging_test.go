package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestCloudLoggingKeys(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelDebug)
	for _, tc := range []struct {
		level    slog.Level
		severity string
	}{{slog.LevelDebug, "DEBUG"}, {slog.LevelInfo, "INFO"}, {slog.LevelWarn, "WARNING"}, {slog.LevelError, "ERROR"}} {
		buf.Reset()
		log.Log(context.Background(), tc.level, "hello", "counter_id", "c1")
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line["severity"] != tc.severity || line["message"] != "hello" || line["counter_id"] != "c1" || line["time"] == nil {
			t.Errorf("%v: %s", tc.level, buf.String())
		}
		if _, ok := line["level"]; ok {
			t.Errorf("slog's own level key is still there: %s", buf.String())
		}
	}
}

func TestTraceAttrs(t *testing.T) {
	for _, tc := range []struct {
		name, header, value string
		trace, span         string
		sampled             bool
	}{
		{"traceparent", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			"projects/p/traces/4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true},
		{"traceparent unsampled", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
			"projects/p/traces/4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", false},
		{"cloud trace", "X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/1;o=1",
			"projects/p/traces/105445aa7843bc8bf206b12000100000", "0000000000000001", true},
		{"bad traceparent", "traceparent", "00-xyz-00f067aa0ba902b7-01", "", "", false},
		{"zero trace id", "traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", "", false},
		{"no header", "", "", "", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set(tc.header, tc.value)
		}
		got := map[string]any{}
		for _, a := range TraceAttrs(r, "p") {
			got[a.Key] = a.Value.Any()
		}
		if tc.trace == "" {
			if len(got) != 0 {
				t.Errorf("%s: %v, want no trace", tc.name, got)
			}
			continue
		}
		if got[TraceKey] != tc.trace || got[SpanKey] != tc.span || got[SampledKey] != tc.sampled {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

func TestAnnotationsReachEveryLaterLine(t *testing.T) {
	var buf bytes.Buffer
	ctx := NewContext(context.Background(), New(&buf, slog.LevelInfo).With("function", "f"))
	FromContext(ctx).Info("before")
	Annotate(ctx, "counter_id", "c1")
	FromContext(ctx).Info("after")
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["counter_id"] != nil || lines[1]["counter_id"] != "c1" || lines[1]["function"] != "f" {
		t.Errorf("lines = %v", lines)
	}
	if FromContext(context.Background()) != slog.Default() {
		t.Error("a context without a logger does not give slog.Default()")
	}
}

// TestTraceAttrsOfARealSpan: with telemetry on, the request's own span
// names the log lines, not the caller's.
func TestTraceAttrsOfARealSpan(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	r = r.WithContext(trace.ContextWithSpanContext(r.Context(), sc))
	attrs := TraceAttrs(r, "p")
	if len(attrs) != 3 || attrs[0].Value.String() != "projects/p/traces/"+sc.TraceID().String() || attrs[1].Value.String() != sc.SpanID().String() {
		t.Errorf("TraceAttrs = %v, want the span's ids", attrs)
	}
}

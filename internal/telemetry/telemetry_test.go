package telemetry

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"}, true},
		{map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("Enabled(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
	none := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}
	if get := func(k string) string { return none[k] }; wants(get, "TRACES") || !wants(get, "METRICS") {
		t.Error("OTEL_TRACES_EXPORTER=none with an endpoint: want metrics only")
	}
	// Off, Setup installs nothing and its shutdown does nothing.
	shutdown, err := Setup(context.Background(), "f", func(string) string { return "" })
	if err != nil || shutdown(context.Background()) != nil {
		t.Errorf("Setup off: %v", err)
	}
}

// TestCloudTraceContext: Google's header gives the caller's span (its span
// id decimal), and a traceparent wins over it.
func TestCloudTraceContext(t *testing.T) {
	p := propagation.NewCompositeTextMapPropagator(CloudTraceContext{}, propagation.TraceContext{})
	h := http.Header{}
	h.Set("X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/255;o=1")
	sc := trace.SpanContextFromContext(p.Extract(context.Background(), propagation.HeaderCarrier(h)))
	if sc.TraceID().String() != "105445aa7843bc8bf206b12000100000" || sc.SpanID().String() != "00000000000000ff" || !sc.IsSampled() || !sc.IsRemote() {
		t.Errorf("from X-Cloud-Trace-Context: %v", sc)
	}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	sc = trace.SpanContextFromContext(p.Extract(context.Background(), propagation.HeaderCarrier(h)))
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("with a traceparent too: %v, want the traceparent's", sc)
	}
	for _, bad := range []string{"", "nothex/1", "105445aa7843bc8bf206b12000100000", "105445aa7843bc8bf206b12000100000/x"} {
		h := http.Header{}
		h.Set("X-Cloud-Trace-Context", bad)
		if sc := trace.SpanContextFromContext(CloudTraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h))); sc.IsValid() {
			t.Errorf("%q gave %v", bad, sc)
		}
	}
}

// TestOnlyGoogleGetsTheToken: the service account's token goes to Google's
// OTLP endpoint only, whatever else a URL holds.
func TestOnlyGoogleGetsTheToken(t *testing.T) {
	for endpoint, want := range map[string]bool{
		"https://telemetry.googleapis.com":                          true,
		"https://telemetry.googleapis.com/v1/traces":                true,
		"https://collector.example.com/?x=telemetry.googleapis.com": false,
		"https://telemetry.googleapis.com.example.com":              false,
		"http://127.0.0.1:4318":                                     false,
		"":                                                          false,
	} {
		if got, err := isGoogle(endpoint); got != want || err != nil {
			t.Errorf("isGoogle(%q) = %v, %v; want %v", endpoint, got, err, want)
		}
	}
	traces := func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"}[k]
	}
	if !wants(traces, "TRACES") || wants(traces, "METRICS") {
		t.Error("a traces endpoint alone should export traces only")
	}
}

package telemetry

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestServeContinuesTheCallersTrace runs Serve with the SDK's own
// providers: the span continues the caller's traceparent, says the
// function and status and nothing of the caller, and the duration metric
// is by function and status, with a made-up method folded into _OTHER; a
// panic goes on up, counted as what the caller got: the status already
// written, else a 500, or no answer at all for http.ErrAbortHandler.
func TestServeContinuesTheCallersTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(CloudTraceContext{}, propagation.TraceContext{}))

	h := Serve("incrementCounter", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "BREW" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/bug":
			panic("a bug")
		case "/late":
			w.WriteHeader(http.StatusOK)
			panic("a bug after the answer")
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through Serve's writer: %v", err)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.WriteHeader(http.StatusOK) // a second WriteHeader changes nothing
	})
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := httptest.NewRequest(http.MethodPost, "/incrementCounter", strings.NewReader("{}"))
	r.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	r.Header.Set("User-Agent", "secret-agent")
	h(httptest.NewRecorder(), r)
	for i := range 3 {
		h(httptest.NewRecorder(), httptest.NewRequest("BREW", "/incrementCounter?"+strings.Repeat("x", i), nil))
	}

	for _, path := range []string{"/abort", "/bug", "/late"} {
		func() {
			defer func() {
				if p := recover(); p == nil {
					t.Errorf("%s: the handler's panic did not come out of Serve", path)
				}
			}()
			h(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, path, nil))
		}()
	}

	ended := spans.Ended()
	if len(ended) != 7 {
		t.Fatalf("%d spans, want 7", len(ended))
	}
	for i, want := range []string{"Error", "Error", "Unset"} {
		if got := ended[4+i].Status().Code.String(); got != want {
			t.Errorf("span status of panic %d: %s, want %s", i, got, want)
		}
	}
	s := ended[0]
	if s.SpanContext().TraceID().String() != traceID || s.Parent().SpanID().String() != parent || s.Name() != "incrementCounter" {
		t.Errorf("span %s in trace %s under %s, want incrementCounter in %s under %s", s.Name(), s.SpanContext().TraceID(), s.Parent().SpanID(), traceID, parent)
	}
	got := map[attribute.Key]string{}
	for _, a := range s.Attributes() {
		got[a.Key] = a.Value.String()
	}
	if got["http.response.status_code"] != "503" || got["http.route"] != "incrementCounter" || got["http.request.method"] != "POST" ||
		got["url.scheme"] != "http" || got["error.type"] != "503" || len(got) != 5 {
		t.Errorf("span attributes %v, want the method, the route, the scheme, 503 and its error.type only", got)
	}
	if s.Status().Code.String() != "Error" {
		t.Errorf("a 503's span status is %v", s.Status())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "http.server.request.duration" {
				continue
			}
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				method, _ := p.Attributes.Value("http.request.method")
				key := method.String()
				if status, ok := p.Attributes.Value("http.response.status_code"); ok {
					key += " " + status.String()
				}
				if e, ok := p.Attributes.Value("error.type"); ok {
					key += " error.type=" + e.String()
				}
				counts[key] += p.Count
			}
		}
	}
	want := map[string]uint64{"POST 503 error.type=503": 1, "_OTHER 405": 3, "POST error.type=aborted": 1, "POST 500 error.type=500": 1, "POST 200": 1}
	if !maps.Equal(counts, want) {
		t.Errorf("http.server.request.duration counts %v, want %v", counts, want)
	}
}

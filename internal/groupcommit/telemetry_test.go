package groupcommit

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestFlushSpanJoinsASampledCallersTrace: a flush's span is the child of
// a sampled request it carries, so a parent-based sampler keeps it with
// that request's trace, and links to the other sampled ones only; a flush
// carrying no sampled request is not recorded.
func TestFlushSpanJoinsASampledCallersTrace(t *testing.T) {
	spans := recorder()
	before := len(spans.Ended())
	b := New(100, 200*time.Millisecond, func(_ context.Context, _ string, items []int) []int { return items })
	caller := func(n byte, sampled bool) trace.SpanContext {
		cfg := trace.SpanContextConfig{TraceID: trace.TraceID{n}, SpanID: trace.SpanID{n}}
		if sampled {
			cfg.TraceFlags = trace.FlagsSampled
		}
		return trace.NewSpanContext(cfg)
	}
	carry := func(callers ...trace.SpanContext) {
		var wg sync.WaitGroup
		for _, sc := range callers {
			wg.Go(func() {
				if _, err := b.Do(trace.ContextWithSpanContext(context.Background(), sc), "k", []int{1}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	unsampledA, sampledB, sampledC, unsampledD := caller(1, false), caller(2, true), caller(3, true), caller(4, false)
	carry(unsampledA, sampledB, sampledC, unsampledD)
	carry(unsampledA, unsampledD)

	ended := spans.Ended()[before:]
	if len(ended) != 1 {
		t.Fatalf("%d flush spans recorded, want 1: the first flush's", len(ended))
	}
	s := ended[0]
	if got := attribute.NewSet(s.Attributes()...); !got.HasValue("groupcommit.requests") {
		t.Fatalf("flush attributes %v", s.Attributes())
	} else if v, _ := got.Value("groupcommit.requests"); v.AsInt64() != 4 {
		t.Fatalf("the flush carried %d requests, want the 4 at once", v.AsInt64())
	}
	parent := s.Parent()
	var other trace.SpanContext
	switch {
	case parent.Equal(sampledB):
		other = sampledC
	case parent.Equal(sampledC):
		other = sampledB
	default:
		t.Fatalf("the flush's parent is %v, want a sampled caller", parent)
	}
	if links := s.Links(); len(links) != 1 || !links[0].SpanContext.Equal(other) {
		t.Errorf("the flush links to %v, want the other sampled caller only (%v)", links, other)
	}
}

// recorder installs the global tracer provider once: the global one
// delegates to the first provider set, and -count runs a test again.
var recorder = sync.OnceValue(func() *tracetest.SpanRecorder {
	spans := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample()))))
	return spans
})

package telemetry

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardcount/shardcount/internal/logging"
)

// CloudTraceContext reads X-Cloud-Trace-Context, which Google's front ends
// send, as the caller's span context: one way, it writes nothing. Listed
// before propagation.TraceContext, a traceparent header wins over it.
// (Google's own propagator lives in a module it has deprecated; this is
// the one header it reads.)
type CloudTraceContext struct{}

const cloudTraceHeader = "X-Cloud-Trace-Context"

// Inject writes nothing: the functions call no one who reads it.
func (CloudTraceContext) Inject(context.Context, propagation.TextMapCarrier) {}

// Extract returns ctx with the remote span context of the header, if any.
func (CloudTraceContext) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	traceHex, spanHex, sampled, ok := logging.ParseCloudTrace(carrier.Get(cloudTraceHeader))
	if !ok || spanHex == "" {
		return ctx
	}
	var cfg trace.SpanContextConfig
	if _, err := hex.Decode(cfg.TraceID[:], []byte(traceHex)); err != nil {
		return ctx
	}
	if _, err := hex.Decode(cfg.SpanID[:], []byte(spanHex)); err != nil {
		return ctx
	}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	cfg.Remote = true
	if sc := trace.NewSpanContext(cfg); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Fields are the headers Extract reads.
func (CloudTraceContext) Fields() []string { return []string{cloudTraceHeader} }

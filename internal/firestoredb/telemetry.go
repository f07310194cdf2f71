package firestoredb

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
)

// Telemetry of the Firestore calls (docs/operations/observability.md): a
// span per commit, and the failures by class. No-ops until a provider is
// set.
var (
	tracer        = otel.Tracer("github.com/shardcount/shardcount/internal/firestoredb")
	meter         = otel.Meter("github.com/shardcount/shardcount/internal/firestoredb")
	callErrors, _ = meter.Int64Counter("shardcount.firestore.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Failed Firestore calls, by class (the gRPC code: Unavailable, Aborted, DeadlineExceeded, …)"))
	deadlineHits, _ = meter.Int64Counter("shardcount.deadline_hits", metric.WithUnit("{call}"),
		metric.WithDescription("Firestore calls cut by their deadline (FIRESTORE_DEADLINE): each answered 503"))
)

// startCommit starts a commit's span.
func startCommit(ctx context.Context, writes int) (context.Context, trace.Span) {
	return tracer.Start(ctx, "firestore.commit", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("firestore.writes", writes)))
}

// endCall ends a call's span with its outcome.
func endCall(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(otelcodes.Error, Code(err).String())
	}
	span.End()
}

// countFailure counts a failed call by its class.
func countFailure(c codes.Code) {
	ctx := context.Background()
	callErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("class", c.String())))
	if c == codes.DeadlineExceeded {
		deadlineHits.Add(ctx, 1)
	}
}

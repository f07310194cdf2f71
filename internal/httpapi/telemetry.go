package httpapi

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Telemetry of the edge (docs/operations/observability.md): a span for its
// checks, and the callers it refused. No-ops until a provider is set.
var (
	tracer      = otel.Tracer("github.com/shardcount/shardcount/internal/httpapi")
	meter       = otel.Meter("github.com/shardcount/shardcount/internal/httpapi")
	refusals, _ = meter.Int64Counter("shardcount.refusals", metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused for who sent them: 401 (no or a bad token), 403 (not allowed), 429 (budget spent)"))
)

// CountRefusal counts a 401, 403 or 429 answer of function fn (or of one
// item of a batch).
func CountRefusal(ctx context.Context, fn string, status int) {
	switch status {
	case 401, 403, 429:
		refusals.Add(ctx, 1, metric.WithAttributes(attribute.String("function", fn), attribute.String("code", strconv.Itoa(status))))
	}
}

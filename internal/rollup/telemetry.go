package rollup

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// Telemetry of the roll-up and reconcile (docs/operations/observability.md).
// No-ops until a provider is set.
var (
	meter  = otel.Meter("github.com/shardcount/shardcount/internal/rollup")
	lag, _ = meter.Float64Histogram("shardcount.rollup.lag", metric.WithUnit("s"),
		metric.WithDescription("Age of a shard write when the roll-up that includes it committed (its slot's holder's write): the eventual read's staleness"),
		metric.WithExplicitBucketBoundaries(0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300, 900))
	events, _ = meter.Int64Counter("shardcount.rollup.events", metric.WithUnit("{event}"),
		metric.WithDescription("Shard write events received by rollupCounter"))
	writes, _ = meter.Int64Counter("shardcount.rollup.writes", metric.WithUnit("{write}"),
		metric.WithDescription("Roll-up writes of a counter document (by roll-ups and reconcile): events per roll-up is events over writes"))
	mismatches, _ = meter.Int64Counter("shardcount.reconcile.audit_mismatches", metric.WithUnit("{counter}"),
		metric.WithDescription("Unique counters whose shards differed from their members (writes outside the functions). Should be 0"))
)

// recordLag records how old the write at writtenAt is now that a roll-up
// includes it.
func recordLag(ctx context.Context, now, writtenAt time.Time) {
	lag.Record(ctx, max(0, now.Sub(writtenAt).Seconds()))
}

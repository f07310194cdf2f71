package telemetry

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/increment"
)

// changes counts increments and likes by outcome
// (docs/operations/observability.md); a no-op until a provider is set.
var changes, _ = otel.Meter("github.com/shardcount/shardcount/internal/core").Int64Counter("shardcount.increments",
	metric.WithUnit("{increment}"),
	metric.WithDescription("Increments and likes (like=true: of a unique counter) by outcome: applied, replayed, unchanged (a like of a member), or the error's code"))

// Increments counts increments' outcomes for the core (core.Metrics).
type Increments struct{}

// CountIncrement counts one increment's outcome: its result, or err. The
// count takes no exemplars, so it is given no request's context: the SDK's
// default filter looks for a sampled span in the context on every
// measurement, a walk up the request's deep context chain that cost more
// per increment than the count itself (bench/README.md, "Telemetry's
// cost"). The request's latency histogram keeps its exemplars.
func (Increments) CountIncrement(like bool, r increment.Result, err error) {
	outcome := "applied"
	switch {
	case err != nil:
		outcome = strings.ToLower(string(errs.CodeOf(err)))
	case r.Err != nil:
		outcome = strings.ToLower(string(errs.CodeOf(r.Err)))
	case r.Replayed:
		outcome = "replayed"
	case like && !r.Changed:
		outcome = "unchanged"
	}
	key := changeKey{like, outcome}
	o, ok := changeAttributes.Load(key)
	if !ok {
		o, _ = changeAttributes.LoadOrStore(key, metric.WithAttributeSet(attribute.NewSet(attribute.Bool("like", like), attribute.String("outcome", outcome))))
	}
	changes.Add(context.Background(), 1, o.(metric.AddOption))
}

// changeAttributes keeps the attributes of each outcome (a few dozen),
// built once rather than on every increment.
var changeAttributes sync.Map

type changeKey struct {
	like    bool
	outcome string
}

package service

import (
	"cmp"
	"context"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/rollup"
	"github.com/shardcount/shardcount/internal/telemetry"
)

// changes counts increments and likes by outcome
// (docs/operations/observability.md); a no-op until a provider is set.
var changes, _ = otel.Meter("github.com/shardcount/shardcount/internal/service").Int64Counter("shardcount.increments",
	metric.WithUnit("{increment}"),
	metric.WithDescription("Increments and likes (like=true: of a unique counter) by outcome: applied, replayed, unchanged (a like of a member), or the error's code"))

// corrections counts what the exactness alarm watches (a no-op until a
// provider is set).
var corrections, _ = otel.Meter("github.com/shardcount/shardcount/internal/service").Int64Counter("shardcount.reconcile.corrections",
	metric.WithUnit("{counter}"),
	metric.WithDescription("Counters whose stored total reconcile found stale, its roll-up more than the scheduled run's settling time behind: a lost last event. Should be 0"))

// countCorrection counts a reconcile's correction of a roll-up far
// behind: one merely under way (a by-id or full run just after writes) is
// no alarm.
func (a *app) countCorrection(ctx context.Context, o rollup.Outcome) {
	if o.Corrected && o.Behind > a.cfg.ReconcileSettle() {
		corrections.Add(ctx, 1)
	}
}

// countChange counts one increment's outcome: its result, or err. The
// count takes no exemplars, so it is given no request's context: the SDK's
// default filter looks for a sampled span in the context on every
// measurement, a walk up the request's deep context chain that cost more
// per increment than the count itself (bench/README.md, "Telemetry's
// cost"). The request's latency histogram keeps its exemplars.
func countChange(like bool, r firestoredb.IncrementResult, err error) {
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

// startTelemetry turns OpenTelemetry on when the OTEL_* settings ask for
// it (internal/telemetry). Deployed, it flushes what is buffered when the
// platform stops the instance (SIGTERM), then exits as it would have.
func (s *Server) startTelemetry() {
	shutdown, err := telemetry.Setup(context.Background(), cmp.Or(s.getenv("K_SERVICE"), s.getenv("FUNCTION_TARGET"), "shardcount"), s.getenv)
	if err != nil {
		s.log.Error("telemetry is off: its settings are refused", "error", err.Error())
		return
	}
	s.shutdownTelemetry = shutdown
	if !telemetry.Enabled(s.getenv) || s.getenv("K_SERVICE") == "" {
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shutdown(ctx)
		os.Exit(0)
	}()
}

// Shutdown flushes the telemetry buffered, for a caller that stops the
// server itself (deployed, SIGTERM does it).
func (s *Server) Shutdown(ctx context.Context) error {
	if s.shutdownTelemetry == nil {
		return nil
	}
	return s.shutdownTelemetry(ctx)
}

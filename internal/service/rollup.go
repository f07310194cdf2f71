package service

import (
	"context"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/rollup"
)

// rollupCounter receives the Firestore event of a shard write and returns
// once the counter's roll-up will include it (internal/rollup). An event it
// cannot use is an INVALID_ARGUMENT error (answered 4xx, not retried by the
// local bridge); UNAVAILABLE asks Eventarc to deliver it again.
func (a *app) rollupCounter(ctx context.Context, e event.Event) error {
	a.rollupEvents.Add(1)
	ev, err := fsevent.Decode(e.DataContentType(), e.Data())
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "the event's data is not a Firestore DocumentEventData: %v", err)
	}
	id, ok := shardCounterID(ev.Path())
	if !ok {
		return errs.New(errs.InvalidArgument, "the event is about %q, not a shard of a counter", ev.Name())
	}
	// A trigger deployed on another database (FIRESTORE_DATABASE changed,
	// or its filter wrong) would roll up a counter of this one by mistake.
	// Acknowledged (Eventarc would redeliver any other answer for a day)
	// and logged at ERROR.
	if !strings.Contains(ev.Name(), "/databases/"+a.cfg.Database+"/documents/") {
		logging.FromContext(ctx).Error("acknowledging an event of another database than FIRESTORE_DATABASE: is the trigger's database filter right?",
			"document", ev.Name(), "database", a.cfg.Database)
		return nil
	}
	logging.Annotate(ctx, "counter_id", id)
	linkToWrite(ctx, ev)
	return a.reconciler.Include(ctx, rollup.Event{ID: e.ID(), CounterID: id, WrittenAt: ev.WrittenAt(e.Time()), Deleted: ev.Deleted(),
		LastWrittenAt: ev.LastWrittenAt()})
}

// shardCounterID returns {counterId} of "counters/{counterId}/shards/{n}".
func shardCounterID(path string) (string, bool) {
	p := strings.Split(path, "/")
	if len(p) != 4 || p[0] != datamodel.Counters || p[2] != datamodel.Shards || counter.ValidateID(p[1]) != nil {
		return "", false
	}
	return p[1], true
}

// linkToWrite links the event's span to the commit that wrote the shard,
// whose traceparent the shard holds when telemetry is on: the trace goes
// from a request to the roll-up that counted it.
func linkToWrite(ctx context.Context, ev *fsevent.Event) {
	span := trace.SpanFromContext(ctx)
	v := ev.Value.GetFields()[datamodel.FieldTraceparent].GetStringValue()
	if v == "" || !span.IsRecording() {
		return
	}
	carrier := propagation.MapCarrier{"traceparent": v}
	if sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier)); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc})
	}
}

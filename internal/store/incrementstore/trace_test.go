package incrementstore

import (
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/store/shared"

	"go.opentelemetry.io/otel/trace"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// TestATraceparentKeepsTheSketch: with telemetry on, a distinct counter's
// shard write keeps its sketch beside the traceparent, whether it creates
// the shard (no mask) or updates it (a mask); it panicked on the first and
// dropped the sketch on the second.
func TestATraceparentKeepsTheSketch(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "") // the DB only builds names here
	db, err := fs.OnAPI(nil, "demo-trace", fs.DefaultDatabase)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := shared.New(db, shared.Options{})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	for _, version := range []time.Time{{}, time.Now()} {
		w := withTraceparent(base.SketchWrite("watchers:v", 3, []byte{2, 14}, version, shared.ShardChange{Commits: 1}), sc)
		f := w.GetUpdate().GetFields()
		if f[dm.FieldSketch] == nil || f[dm.FieldTraceparent] == nil {
			t.Errorf("version %v: fields %v, want the sketch and the traceparent", version, f)
		}
		if m := w.GetUpdateMask().GetFieldPaths(); !version.IsZero() && len(m) != 2 {
			t.Errorf("an update's mask %v, want the sketch and the traceparent", m)
		}
	}
}

package firestoredb

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestFailuresAreCounted: every failure classify sees is counted by class,
// and one past its deadline as a deadline hit too.
func TestFailuresAreCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	Classify(status.Error(codes.DeadlineExceeded, "slow"), "read")
	Classify(status.Error(codes.Aborted, "contention"), "commit")
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				class, _ := p.Attributes.Value("class")
				got[m.Name+" "+class.AsString()] += p.Value
			}
		}
	}
	for _, want := range []string{"shardcount.firestore.errors DeadlineExceeded", "shardcount.firestore.errors Aborted", "shardcount.deadline_hits "} {
		if got[want] != 1 {
			t.Errorf("%s = %d, want 1 (all: %v)", want, got[want], got)
		}
	}
}

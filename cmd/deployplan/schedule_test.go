package main

import (
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestReconcileRunsWithinTheEstimatesReach: with the longest runs and
// settling times the settings allow, a counter whose roll-up event was
// lost just after a run began is rolled up by the run after next (the
// next one may not see it settled, or stop at its budget before it)
// within windows.MaxReach, so no distinct counter's hour keeps a stale
// estimate for want of a reconcile.
func TestReconcileRunsWithinTheEstimatesReach(t *testing.T) {
	for _, longest := range []map[string]string{
		{"RECONCILE_BUDGET": "8m", "FIRESTORE_DEADLINE": "4m14s", "ROLLUP_CADENCE": "50ms"}, // the longest run
		{"RECONCILE_BUDGET": "8m", "FIRESTORE_DEADLINE": "2m45s", "ROLLUP_CADENCE": "1m"},   // the longest settling
	} {
		cfg, err := config.FromEnv(func(k string) string { return longest[k] })
		if err != nil {
			t.Fatal(err)
		}
		if healed := 2*reconcileEvery + cfg.ReconcileSettle() + cfg.ReconcileTimeout(); healed > windows.MaxReach {
			t.Errorf("with %v, a lost event heals within %v, past windows.MaxReach (%v)", longest, healed, windows.MaxReach)
		}
		var out strings.Builder
		(&plan{project: "demo-x", region: "us-central1"}).writeScheduler(&out, cfg)
		if want := "--schedule='*/15 * * * *'"; !strings.Contains(out.String(), want) {
			t.Fatalf("the scheduler job has no %s:\n%s", want, out.String())
		}
	}
}

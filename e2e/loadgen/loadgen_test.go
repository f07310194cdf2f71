// Package loadgen load-tests a secured setup the way docs/operations/
// load-testing.md tells a user to: scripts/dev.sh with AUTH=required and the
// budgets raised for a load test (per user and per client address), and
// cmd/loadgen spreading the load over users it signs up against dev.sh's
// Auth emulator. Nothing may be refused for a budget, and every run must
// end exact.
package loadgen

import (
	"path/filepath"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// LoadTestBudgets is what docs/operations/load-testing.md says to set,
// for users and addresses alike.
const LoadTestBudgets = "call=0:1,increment=0:1,create=0:1,read=0:1,strong=0:1"

func TestLoadgenWithManyUsers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dev := testenv.StartDev(t, root, "AUTH=required", "RATE_LIMITS="+LoadTestBudgets, "ADDRESS_RATE_LIMITS="+LoadTestBudgets)
	loadgen := testenv.BuildLoadgen(t, root)
	env := []string{"FIRESTORE_EMULATOR_HOST=" + dev.FirestoreHost(), "FIREBASE_AUTH_EMULATOR_HOST=" + dev.AuthHost(),
		"GOOGLE_CLOUD_PROJECT=" + testenv.AuthProject()}
	for _, scenario := range []string{"hot", "likes"} {
		r, b := loadgen.Run(t, env, "-url", dev.Functions(), "-users", "50", "-d", "3s", "-c", "16", "-shards", "10", scenario)
		if r.OK == 0 || len(r.Errors) > 0 || r.Check == nil || !r.Check.Exact {
			t.Fatalf("loadgen -users 50 %s: %s", scenario, b)
		}
		t.Logf("%s: %d ok, strong %d, liking %d", scenario, r.OK, r.Check.Strong, r.Liking)
	}
}

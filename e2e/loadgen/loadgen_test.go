// Package loadgen load-tests a secured setup the way docs/operations/
// load-testing.md tells a user to: scripts/dev.sh with AUTH=required and the
// budgets raised for a load test (per user and per client address), and
// cmd/loadgen spreading the load over users it signs up against dev.sh's
// Auth emulator. Nothing may be refused for a budget, and every run must
// end exact.
package loadgen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// LoadTestBudgets is what docs/operations/load-testing.md says to set.
const LoadTestBudgets = "increment=0:1,create=0:1,strong=0:1"

func TestLoadgenWithManyUsers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dev := testenv.StartDev(t, root, "AUTH=required", "RATE_LIMITS="+LoadTestBudgets)
	dir := t.TempDir()
	bin := filepath.Join(dir, "loadgen")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/loadgen").CombinedOutput(); err != nil {
		t.Fatalf("build loadgen: %v\n%s", err, out)
	}
	for _, scenario := range []string{"hot", "likes"} {
		out := filepath.Join(dir, scenario+".json")
		args := []string{"-url", dev.Functions(), "-users", "50", "-d", "3s", "-c", "16", "-shards", "10", "-quiet", "-json", out, scenario}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "FIRESTORE_EMULATOR_HOST="+dev.FirestoreHost(), "FIREBASE_AUTH_EMULATOR_HOST="+dev.AuthHost(),
			"GOOGLE_CLOUD_PROJECT="+testenv.AuthProject())
		stdout, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("loadgen %v: %v\n%s", args, err, stdout)
		}
		var r struct {
			OK     int64          `json:"ok"`
			Errors map[string]int `json:"errors_by_status"`
			Check  struct {
				Strong int64
				Exact  bool
			} `json:"check"`
			Liking int64 `json:"liking"`
		}
		b, _ := os.ReadFile(out)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v\n%s", out, err, b)
		}
		if r.OK == 0 || len(r.Errors) > 0 || !r.Check.Exact {
			t.Errorf("loadgen -users 50 %s: %d ok, errors %v, exact %v\n%s", scenario, r.OK, r.Errors, r.Check.Exact, stdout)
		}
		t.Logf("%s: %d ok, strong %d, liking %d", scenario, r.OK, r.Check.Strong, r.Liking)
	}
}

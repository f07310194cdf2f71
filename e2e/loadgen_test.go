package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLoadgenSmoke runs the load generator for a few seconds against the
// functions and against the raw emulator, as CI's smoke test of the tool
// (scripts/bench.sh runs the full benchmark).
func TestLoadgenSmoke(t *testing.T) {
	waitForQuietEvents(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "loadgen")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/loadgen").CombinedOutput(); err != nil {
		t.Fatalf("build loadgen: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		mode string
		args []string
	}{
		{"functions", []string{"-url", base}},
		{"raw", []string{"-mode", "raw", "-project", project + "-raw"}},
	} {
		out := filepath.Join(dir, tc.mode+".json")
		args := append(tc.args, "-d", "2s", "-c", "8", "-shards", "4", "-quiet", "-json", out, "hot")
		cmd := exec.Command(bin, args...)
		cmd.Env = os.Environ()
		stdout, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("loadgen %v: %v\n%s", args, err, stdout)
		}
		var r struct {
			OK     int64          `json:"ok"`
			Errors map[string]int `json:"errors_by_status"`
			P99    float64        `json:"p99_ms"`
			Check  struct {
				Acknowledged, Strong int64
				Exact                bool
				RollupLagMS          *float64 `json:"rollup_lag_ms"`
			} `json:"check"`
			Cost *struct {
				Commits             int64   `json:"commits"`
				CommitsPerIncrement float64 `json:"commits_per_increment"`
			} `json:"cost"`
		}
		b, _ := os.ReadFile(out)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v\n%s", out, err, b)
		}
		if r.OK == 0 || len(r.Errors) > 0 || r.P99 <= 0 || !r.Check.Exact || r.Check.Strong != r.OK {
			t.Errorf("%s: %s", tc.mode, b)
		}
		if tc.mode == "functions" && (r.Check.RollupLagMS == nil || *r.Check.RollupLagMS < 0) {
			t.Errorf("functions: the roll-up did not catch up: %s", b)
		}
		// The server's own count of its commits: group commit shares them.
		if tc.mode == "functions" && (r.Cost == nil || r.Cost.Commits <= 0 || r.Cost.CommitsPerIncrement >= 1) {
			t.Errorf("functions: no commit count from the server, or no sharing: %s", b)
		}
		t.Logf("%s: %d increments, p99 %.1f ms", tc.mode, r.OK, r.P99)
	}
}

package e2e

import (
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// TestLoadgenSmoke runs the load generator for a few seconds against the
// functions and against the raw emulator, as CI's smoke test of the tool
// (scripts/bench.sh runs the full benchmark).
func TestLoadgenSmoke(t *testing.T) {
	waitForQuietEvents(t)
	loadgen := testenv.BuildLoadgen(t, "..")
	for _, tc := range []struct {
		mode string
		args []string
	}{
		{"functions", []string{"-url", base}},
		{"raw", []string{"-mode", "raw", "-project", project + "-raw"}},
	} {
		r, b := loadgen.Run(t, nil, append(tc.args, "-d", "2s", "-c", "8", "-shards", "4", "hot")...)
		if r.OK == 0 || len(r.Errors) > 0 || r.P99 <= 0 || r.Check == nil || !r.Check.Exact || r.Check.Strong != r.OK {
			t.Fatalf("%s: %s", tc.mode, b)
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

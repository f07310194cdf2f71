package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// Loadgen is cmd/loadgen, built for a test.
type Loadgen struct {
	bin, dir string
}

// BuildLoadgen builds cmd/loadgen of the repository at root.
func BuildLoadgen(t *testing.T, root string) Loadgen {
	t.Helper()
	l := Loadgen{dir: t.TempDir()}
	l.bin = filepath.Join(l.dir, "loadgen")
	cmd := exec.Command("go", "build", "-o", l.bin, "./cmd/loadgen")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build loadgen: %v\n%s", err, out)
	}
	return l
}

// Run runs loadgen with args (flags, then the scenario) and env added to
// the test's environment, and returns the report it writes with -json; the
// likes fields are zero for other scenarios. The raw report is returned
// too, for failure messages.
func (l Loadgen) Run(t *testing.T, env []string, args ...string) (loadtest.LikesReport, []byte) {
	t.Helper()
	out, err := os.CreateTemp(l.dir, "report-*.json")
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	args = append([]string{"-quiet", "-json", out.Name()}, args...)
	cmd := exec.Command(l.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if stdout, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loadgen %v: %v\n%s", args, err, stdout)
	}
	b, err := os.ReadFile(out.Name())
	var r loadtest.LikesReport
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("loadgen %v: its report: %v\n%s", args, err, b)
	}
	return r, b
}

package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// WebClientApp returns a directory set up as an app that installed
// shardcount's web client: scripts/build-client.sh's package as
// node_modules/shardcount-client, beside the repository's npm packages
// (the Firebase JS SDK). Scripts copied into it import "shardcount-client"
// as an app's code does.
func WebClientApp(t *testing.T, root string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "node_modules", "firebase")); err != nil {
		NeedEmulators(t, fmt.Errorf("node_modules is missing: run npm ci (scripts/test.sh does)"))
	}
	app := t.TempDir()
	modules := filepath.Join(app, "node_modules")
	// In node_modules itself, as npm installs it: Node resolves its
	// imports (firebase) from where it really is.
	build := exec.Command("bash", filepath.Join(root, "scripts", "build-client.sh"), filepath.Join(modules, "shardcount-client"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-client.sh: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(filepath.Join(root, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(root, "node_modules", e.Name()), filepath.Join(modules, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return app
}

package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheClientInstallsAsTheREADMESays: an app whose package is in a
// subfolder (web/) installs scripts/build-client.sh's package with the
// README's command, `npm install --install-links DIR`, and imports it.
// Without the flag npm links DIR, and Node looks the client's firebase up
// beside DIR, not in the app: the import fails, which is why the README
// gives the flag. The app's firebase comes from the npm registry, as the
// repository's npm ci does (npm's cache first): its ranged dependencies
// need the registry's index, which no lockfile here pins.
func TestTheClientInstallsAsTheREADMESays(t *testing.T) {
	t.Parallel() // npm's work, beside the web client's scenario
	root, _ := filepath.Abs("../..")
	var ours struct {
		Dependencies map[string]string `json:"devDependencies"`
	}
	b, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &ours)
	}
	if err != nil || ours.Dependencies["firebase"] == "" {
		t.Fatalf("the repository's firebase version: %v", err)
	}
	tmp := t.TempDir()
	vendor, web := filepath.Join(tmp, "vendor", "shardcount-client"), filepath.Join(tmp, "web")
	run := func(dir, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		// install-links is npm's default (false) unless a flag says
		// otherwise: a user's npmrc or environment must not decide it here.
		cmd.Env = append(os.Environ(), "NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_AUDIT=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_INSTALL_LINKS=false")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(root, "bash", "scripts/build-client.sh", vendor); err != nil {
		t.Fatalf("scripts/build-client.sh: %v\n%s", err, out)
	}
	if err := os.MkdirAll(web, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(web, "package.json"), []byte(`{"name": "my-app-web", "private": true, "type": "module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(web, "npm", "install", "--prefer-offline", "--ignore-scripts", "firebase@"+ours.Dependencies["firebase"]); err != nil {
		t.Fatalf("the app's firebase: %v\n%s", err, out)
	}
	imports := func() (string, error) {
		return run(web, "node", "--input-type=module", "-e", `const m = await import("shardcount-client"); console.log(typeof m.shardcount)`)
	}
	if out, err := run(web, "npm", "install", "--prefer-offline", "../vendor/shardcount-client"); err != nil {
		t.Fatalf("npm install DIR: %v\n%s", err, out)
	}
	if out, err := imports(); err == nil || !strings.Contains(out, "Cannot find package 'firebase'") {
		t.Errorf("linked (npm install DIR), the import: %v\n%s\nwant Cannot find package 'firebase', the README's reason for --install-links", err, out)
	}
	if out, err := run(web, "npm", "install", "--install-links", "--prefer-offline", "../vendor/shardcount-client"); err != nil {
		t.Fatalf("npm install --install-links DIR: %v\n%s", err, out)
	}
	if out, err := imports(); err != nil || strings.TrimSpace(out) != "function" {
		t.Errorf("installed as the README says, the import: %v\n%s", err, out)
	}
}

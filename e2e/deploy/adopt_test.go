// Adopting shardcount into an app: the merge, the check and the deploy of
// the app's own files.

package deploy

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

func TestDryRunFirestoreFromAnApp(t *testing.T) {
	app := t.TempDir()
	for _, f := range []string{"firestore.rules", "firestore.indexes.json"} {
		b, err := os.ReadFile(filepath.Join(root, "internal/firebasemerge/testdata/app", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(app, f), b, 0o644)
	}
	out, err := dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "counters", "--firestore-from", app)
	if err == nil || !strings.Contains(out, "scripts/firebase-merge.sh --only counters "+app) {
		t.Fatalf("an app without shardcount's block: %v\n%s", err, out)
	}
	merge := exec.Command("bash", "scripts/firebase-merge.sh", "--only", "counters", app)
	merge.Dir = root
	if out, err := merge.CombinedOutput(); err != nil {
		t.Fatalf("firebase-merge.sh: %v\n%s", err, out)
	}
	plan, err := dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "counters", "--firestore-from", app)
	if err != nil || !strings.Contains(plan, filepath.Join(app, "firestore.rules")) || !strings.Contains(plan, "firebaserules.googleapis.com") {
		t.Fatalf("the merged app: %v\n%s", err, plan)
	}
	rules, _ := os.ReadFile(filepath.Join(app, "firestore.rules"))
	if !strings.Contains(string(rules), "match /posts/{postId}") {
		t.Errorf("the merge lost the app's own rules:\n%s", rules)
	}

	// An app merged for every group deploys the counters alone (a deploy
	// of some functions of an app that uses both), its files as they are,
	// and the plan says what they hold of the other group.
	all := exec.Command("bash", "scripts/firebase-merge.sh", app)
	all.Dir = root
	if out, err := all.CombinedOutput(); err != nil {
		t.Fatalf("firebase-merge.sh: %v\n%s", err, out)
	}
	if plan, err := dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "counters", "--firestore-from", app); err != nil ||
		!strings.Contains(plan, "# note: "+filepath.Join(app, "firestore.rules")+" holds shardcount's rules of the group instruments") {
		t.Fatalf("the counters of an app merged for every group: %v\n%s", err, plan)
	}
	// The app's own single-field indexes of a field go out as they are;
	// a vector index, which gcloud's flags cannot say, is refused.
	indexes := filepath.Join(app, "firestore.indexes.json")
	b, _ := os.ReadFile(indexes)
	own := strings.Replace(string(b), `"fieldOverrides": [`, `"fieldOverrides": [{"collectionGroup":"posts","fieldPath":"tags","indexes":[{"order":"ASCENDING","queryScope":"COLLECTION"},{"arrayConfig":"CONTAINS","queryScope":"COLLECTION_GROUP"}]},`, 1)
	os.WriteFile(indexes, []byte(own), 0o644)
	plan, err = dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "counters", "--firestore-from", app)
	if err != nil || !strings.Contains(plan, "fields update tags --project=demo-x '--database=(default)' --collection-group=posts --index=order=ascending,query-scope=collection --index=array-config=contains,query-scope=collection-group --async") {
		t.Errorf("the app's own field indexes: %v\n%s", err, plan)
	}
	var file map[string]any
	if err := json.Unmarshal([]byte(own), &file); err != nil {
		t.Fatal(err)
	}
	file["indexes"] = append(file["indexes"].([]any), map[string]any{"collectionGroup": "posts", "queryScope": "COLLECTION",
		"fields": []any{map[string]any{"fieldPath": "embedding", "vectorConfig": map[string]any{"dimension": 3, "flat": map[string]any{}}}}})
	vector, _ := json.Marshal(file)
	os.WriteFile(indexes, vector, 0o644)
	if out, err := dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "counters", "--firestore-from", app); err == nil || !strings.Contains(out, "vector") {
		t.Errorf("a vector index: %v\n%s", err, out)
	}
}

func TestAdoptingFromTheAppsDirectory(t *testing.T) {
	app := filepath.Join(t.TempDir(), "myapp")
	layout := map[string]string{
		"firebase.json": `{
  "firestore": {"rules": "firestore/app.rules", "indexes": "firestore/app.indexes.json"},
  "hosting": {"public": "public"},
  "functions": {"source": "functions"}
}
`,
		"firestore/app.rules":        readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.rules")),
		"firestore/app.indexes.json": readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.indexes.json")),
		"public/index.html":          "<h1>my app</h1>\n",
		"functions/index.js":         "exports.hello = () => {};\n",
	}
	for name, content := range layout {
		os.MkdirAll(filepath.Dir(filepath.Join(app, name)), 0o755)
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The app sits next to shardcount as a user's would: reach it relatively.
	rel, err := filepath.Rel(app, root)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{}
	for _, f := range []string{"firestore.rules", "firestore.indexes.json", "firebase.json"} {
		ours[f] = readFile(t, filepath.Join(root, f))
	}
	run := func(script string, args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{filepath.Join(rel, "scripts", script)}, args...)...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "PAGE_TOKEN_SECRET=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if out, err := run("firebase-merge.sh", "--check", "--only", "counters", "."); err == nil {
		t.Fatalf("--check passes an app that lacks shardcount's rules:\n%s", out)
	}
	if out, err := run("firebase-merge.sh", "--only", "counters", "."); err != nil {
		t.Fatalf("merge from the app's directory: %v\n%s", err, out)
	}
	rules := readFile(t, filepath.Join(app, "firestore/app.rules"))
	for _, want := range []string{"match /posts/{postId}", "match /users/{uid}", "BEGIN shardcount rules", "match /counters/{counterId}"} {
		if !strings.Contains(rules, want) {
			t.Errorf("the app's rules lack %q after the merge:\n%s", want, rules)
		}
	}
	if strings.Contains(rules, "/instruments/") || strings.Contains(readFile(t, filepath.Join(app, "firestore/app.indexes.json")), `"instruments"`) {
		t.Errorf("--only counters brought the instruments example's rules or indexes")
	}
	if !strings.Contains(readFile(t, filepath.Join(app, "firestore/app.indexes.json")), `"rollup_slots"`) {
		t.Errorf("the app's indexes lack shardcount's")
	}
	if _, err := os.Stat(filepath.Join(app, "firestore.rules")); err == nil {
		t.Errorf("the merge wrote a firestore.rules the app's firebase.json does not name")
	}
	for f, was := range ours {
		if readFile(t, filepath.Join(root, f)) != was {
			t.Errorf("the merge changed shardcount's own %s", f)
		}
	}
	if out, err := run("firebase-merge.sh", "--check", "--only", "counters", "."); err != nil {
		t.Errorf("--check after the merge: %v\n%s", err, out)
	}
	if out, err := run("firebase-merge.sh", "--check", rel); err != nil {
		t.Errorf("--check on shardcount's own files: %v\n%s", err, out)
	}

	plan, err := run("deploy.sh", "--dry-run", "--project", "demo-x", "--only", "counters", "--firestore-from", ".")
	if err != nil {
		t.Fatalf("the deploy plan from the app's directory: %v\n%s", err, plan)
	}
	deployed := rulesetOf(t, plan)
	if deployed != rules {
		t.Errorf("the plan deploys another ruleset than the app's file:\n%s", deployed)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256([]byte(rules))); !strings.Contains(plan, filepath.Join(app, "firestore/app.rules")) || !strings.Contains(plan, sum) {
		t.Errorf("the plan does not name the app's rules file or its sha256 (%s):\n%s", sum, plan)
	}
	if strings.Contains(plan, "--collection-group=instruments") {
		t.Errorf("--only counters deploys the instruments' indexes")
	}
	if !strings.Contains(plan, "--collection-group=posts") {
		t.Errorf("the plan leaves out the app's own indexes")
	}
}

func rulesetOf(t *testing.T, plan string) string {
	t.Helper()
	for _, line := range strings.Split(plan, "\n") {
		if !strings.Contains(line, "/rulesets'") && !strings.Contains(line, "/rulesets ") {
			continue
		}
		f := fields(line)
		for i, a := range f {
			if a == "-d" && i+1 < len(f) {
				var body struct {
					Source struct {
						Files []struct{ Content string }
					}
				}
				if err := json.Unmarshal([]byte(f[i+1]), &body); err != nil || len(body.Source.Files) != 1 {
					t.Fatalf("the ruleset's body: %v %s", err, f[i+1])
				}
				return body.Source.Files[0].Content
			}
		}
	}
	t.Fatalf("no ruleset in the plan:\n%s", plan)
	return ""
}

func TestScriptsIgnoreCDPATH(t *testing.T) {
	dir, decoys := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(dir, "app"), filepath.Join(decoys, "app")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "app", "firestore.rules"), []byte(readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.rules"))), 0o644)
	check := exec.Command("bash", filepath.Join(root, "scripts/firebase-merge.sh"), "--check", "app")
	check.Dir = dir
	check.Env = append(os.Environ(), "CDPATH="+decoys)
	out, _ := check.CombinedOutput()
	if !strings.Contains(string(out), filepath.Join(dir, "app", "firestore.rules")) {
		t.Errorf("the check did not look at ./app:\n%s", out)
	}
}

func TestRulesWithASpaceInTheirPath(t *testing.T) {
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		testenv.NeedEmulators(t, errors.New("the Firestore emulator's launcher is needed"))
	}
	dir := filepath.Join(t.TempDir(), "My Projects")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "firestore.rules"), []byte(readFile(t, filepath.Join(root, "firestore.rules"))), 0o644)
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	start := exec.Command("bash", "-c", `. scripts/lib.sh && sc_workdir && sc_start_firestore "$1" "$tmp/firestore.log" "--rules=$2" && echo started`,
		"_", port, filepath.Join(dir, "firestore.rules"))
	start.Dir = root
	if out, err := start.CombinedOutput(); err != nil || !strings.Contains(string(out), "started") {
		t.Errorf("the emulator with rules under %q: %v\n%s", dir, err, out)
	}
}

func TestMergingIntoShardcountItselfIsRefused(t *testing.T) {
	merge := exec.Command("bash", "scripts/firebase-merge.sh", ".")
	merge.Dir = root
	if out, err := merge.CombinedOutput(); err == nil || !strings.Contains(string(out), "shardcount's own checkout") {
		t.Errorf("a merge into shardcount's checkout: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", root, "status", "--porcelain", "firestore.rules", "firestore.indexes.json").Output(); err != nil || len(out) > 0 {
		t.Errorf("shardcount's own files changed: %s %v", out, err)
	}
}

// TestNarrowingAMergeDropsTheOtherGroups: an app merged for every group,
// then for the counters only. The instruments' section and indexes stayed
// (a block with more groups passed), so `deploy.sh --only counters
// --firestore-from` deployed their rules and indexes into the app. The
// check still passes such files (an app may use both groups and deploy
// one), and says what they hold of the other.
func TestNarrowingAMergeDropsTheOtherGroups(t *testing.T) {
	app := t.TempDir()
	os.WriteFile(filepath.Join(app, "firestore.rules"), []byte(readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.rules"))), 0o644)
	os.WriteFile(filepath.Join(app, "firestore.indexes.json"), []byte(readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.indexes.json"))), 0o644)
	script := func(name string, args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", name)}, args...)...)
		cmd.Env = append(os.Environ(), "PAGE_TOKEN_SECRET=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := script("firebase-merge.sh", app); err != nil {
		t.Fatalf("the merge of every group: %v\n%s", err, out)
	}
	if out, err := script("firebase-merge.sh", "--check", "--only", "counters", app); err != nil || !strings.Contains(out, "note: "+filepath.Join(app, "firestore.rules")+" holds shardcount's rules of the group instruments") {
		t.Errorf("--check --only counters of files merged for every group: %v\n%s", err, out)
	}
	if out, err := script("firebase-merge.sh", "--only", "counters", app); err != nil {
		t.Fatalf("the merge of the counters only: %v\n%s", err, out)
	}
	rules, indexes := readFile(t, filepath.Join(app, "firestore.rules")), readFile(t, filepath.Join(app, "firestore.indexes.json"))
	if strings.Contains(rules, "/instruments/") || strings.Contains(indexes, `"instruments"`) || !strings.Contains(rules, "match /posts/{postId}") {
		t.Errorf("narrowed to the counters, the app's files hold the instruments' (or lost the app's own):\n%s\n%s", rules, indexes)
	}
	if out, err := script("firebase-merge.sh", "--check", "--only", "counters", app); err != nil || strings.Contains(out, "note:") {
		t.Errorf("--check --only counters after the narrowing: %v\n%s", err, out)
	}
	plan, err := script("deploy.sh", "--dry-run", "--project", "demo-x", "--only", "counters", "--firestore-from", app)
	if err != nil || strings.Contains(plan, "instruments") {
		t.Errorf("the plan of the counters only: %v\n%s", err, plan)
	}
	// Deploying the other group now: the advice keeps the counters' (a
	// merge of the instruments alone would take their rules out).
	instruments := exec.Command("bash", filepath.Join(root, "scripts/deploy.sh"), "--dry-run", "--project", "demo-x", "--only", "instruments", "--firestore-from", app)
	instruments.Env = append(os.Environ(), "PAGE_TOKEN_SECRET=page-token")
	if out, err := instruments.CombinedOutput(); err == nil || !strings.Contains(string(out), "firebase-merge.sh --only counters,instruments") {
		t.Errorf("the instruments of an app merged for the counters: %v\n%s", err, out)
	}
}

// TestAnAppReachedThroughASymlink: firebase.json's paths are the real
// directory's, as the Firebase CLI reads them; the merge wrote beside the
// link instead, and the CLI then deployed the unmerged file.
func TestAnAppReachedThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "myapp")
	os.MkdirAll(real, 0o755)
	os.MkdirAll(filepath.Join(dir, "real", "shared"), 0o755)
	os.MkdirAll(filepath.Join(dir, "links"), 0o755)
	os.WriteFile(filepath.Join(real, "firebase.json"), []byte(`{"firestore": {"rules": "../shared/app.rules", "indexes": "../shared/app.indexes.json"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "real", "shared", "app.rules"), []byte(readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.rules"))), 0o644)
	if err := os.Symlink(filepath.Join("..", "real", "myapp"), filepath.Join(dir, "links", "myapp")); err != nil {
		t.Fatal(err)
	}
	merge := exec.Command("bash", filepath.Join(root, "scripts/firebase-merge.sh"), "--only", "counters", "myapp")
	merge.Dir = filepath.Join(dir, "links")
	if out, err := merge.CombinedOutput(); err != nil {
		t.Fatalf("the merge through the link: %v\n%s", err, out)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "real", "shared", "app.rules")), "BEGIN shardcount rules") {
		t.Error("the file firebase.json names (from the real directory) was not merged")
	}
	if _, err := os.Stat(filepath.Join(dir, "links", "shared")); err == nil {
		t.Error("the merge wrote beside the link")
	}
}

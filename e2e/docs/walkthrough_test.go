package docs

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// TestTheAdoptionWalkthrough runs docs/operations/deploy.md's walkthrough
// as a user would: an app laid out as the docs show, with their
// firebase.json, next to shardcount, every command from the app's
// directory. The merge and the dry run must succeed, and dev.sh
// --firestore-from must run the emulator with the app's rules, shardcount's
// merged in.
func TestTheAdoptionWalkthrough(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/operations/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	config := regexp.MustCompile("(?s)<!-- the walkthrough's firebase.json -->\n```json\n(.*?)```").FindSubmatch(doc)
	block := regexp.MustCompile("(?s)<!-- tested: the walkthrough, by e2e/docs -->\n```sh\n(.*?)```").FindSubmatch(doc)
	settings := regexp.MustCompile("(?s)<!-- the walkthrough's shardcount.env.yaml -->\n```yaml\n(.*?)```").FindSubmatch(doc)
	if config == nil || block == nil || settings == nil {
		t.Fatal("deploy.md has no walkthrough marked for this test")
	}
	src := t.TempDir()
	app := filepath.Join(src, "myapp")
	if err := os.Symlink(root, filepath.Join(src, "shardcount")); err != nil {
		t.Fatal(err)
	}
	sample := func(f string) string {
		b, err := os.ReadFile(filepath.Join(root, "internal/firebasemerge/testdata/app", f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, content := range map[string]string{
		"firebase.json": string(config[1]), "firestore/app.rules": sample("firestore.rules"),
		"firestore/app.indexes.json": sample("firestore.indexes.json"), "public/index.html": "<h1>my app</h1>\n",
		"functions/index.js": "exports.hello = () => {};\n", "shardcount.env.yaml": string(settings[1]),
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(app, name)), 0o755)
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var devArgs []string
	for line := range strings.Lines(string(block[1])) {
		command, _, _ := strings.Cut(line, "#")
		command = strings.TrimSpace(strings.ReplaceAll(command, "~/src/myapp", app))
		switch {
		case command == "" || strings.HasPrefix(command, "cd "):
			continue
		case strings.Contains(command, "scripts/dev.sh"):
			devArgs = strings.Fields(command)
			continue
		}
		cmd := exec.Command("bash", "-c", command)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "PAGE_TOKEN_SECRET=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", command, err, out)
		}
		if strings.Contains(command, "deploy.sh --dry-run") && !strings.Contains(string(out), `;COUNTER_KINDS={"likes": {"unique": true, "num_shards": 8, "keys_in": "posts"}, "views": {"num_shards": 4}};`) {
			t.Errorf("the plan does not deploy the settings file's kinds:\n%s", out)
		}
	}
	rules, _ := os.ReadFile(filepath.Join(app, "firestore/app.rules"))
	if !strings.Contains(string(rules), "match /posts/{postId}") || !strings.Contains(string(rules), "BEGIN shardcount rules") {
		t.Fatalf("after the walkthrough the app's rules are:\n%s", rules)
	}
	if devArgs == nil {
		t.Fatal("the walkthrough does not run scripts/dev.sh")
	}

	dev := testenv.StartDevIn(t, app, devArgs[0], devArgs[1:])
	project := testenv.AuthProject()
	testenv.CreateUserAt(t, dev.AuthHost(), project, "walker")
	token := "Bearer " + testenv.ValidIDToken(project, "walker")
	get := func(doc string) int {
		url := fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/%s", dev.FirestoreHost(), project, doc)
		return testenv.Do(t, "GET", url, "", "Authorization", token).Status
	}
	// The app's rule lets a signed-in user read posts (shardcount's alone
	// would deny it), and shardcount's lets them get a counter.
	if got := get("posts/p1"); got != http.StatusNotFound {
		t.Errorf("a post under the app's rules: %d, want 404 (allowed, not there)", got)
	}
	if got := get("counters/c1"); got != http.StatusNotFound {
		t.Errorf("a counter under shardcount's rules: %d, want 404 (allowed, not there)", got)
	}
	if got := get("counters/c1/shards/0"); got != http.StatusForbidden {
		t.Errorf("a shard: %d, want 403", got)
	}
	// The functions run with the settings file: its kinds answer, others
	// do not.
	for id, want := range map[string]int{"views:post-1": http.StatusOK, "polls:q1": http.StatusNotFound} {
		if got := testenv.Do(t, "POST", dev.Functions()+"/incrementCounter", `{"counter_id":"`+id+`"}`).Status; got != want {
			t.Errorf("an increment of %s: %d, want %d", id, got, want)
		}
	}
}

// An app's settings file: what deploys and runs the functions, never the
// deploying shell; no deploy drops a kind; a merge that adds lines, and
// changes none of the app's but a comma.

package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/service"
)

// handFormatted is an app's indexes file as a person wrote it: four
// spaces, its own key order.
const handFormatted = `{
    "fieldOverrides": [
        {
            "fieldPath": "body",
            "collectionGroup": "posts",
            "indexes": []
        }
    ],
    "indexes": [
        {
            "queryScope": "COLLECTION",
            "collectionGroup": "posts",
            "fields": [
                { "fieldPath": "author", "order": "ASCENDING" },
                { "fieldPath": "created", "order": "DESCENDING" }
            ]
        }
    ]
}
`

// newApp is an existing Firebase app: its firebase.json, rules and a
// hand-formatted indexes file.
func newApp(t *testing.T) string {
	t.Helper()
	app := filepath.Join(t.TempDir(), "myapp")
	files := map[string]string{
		"firebase.json":          `{"firestore": {"rules": "firestore.rules", "indexes": "firestore.indexes.json"}}` + "\n",
		"firestore.rules":        readFile(t, filepath.Join(root, "internal/firebasemerge/testdata/app/firestore.rules")),
		"firestore.indexes.json": handFormatted,
	}
	os.MkdirAll(app, 0o755)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return app
}

// script runs one of shardcount's scripts from dir, with env.
func script(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", name)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PAGE_TOKEN_SECRET="), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestTheMergeOnlyAddsLines: every line of the app's indexes file stays,
// in order, as it was, but for a comma at the end of the line before
// shardcount's entries (an empty list on one line, which the merge opens,
// is internal/firebasemerge's test); and the merge creates the settings
// file once.
func TestTheMergeOnlyAddsLines(t *testing.T) {
	app := newApp(t)
	if out, err := script(t, app, nil, "firebase-merge.sh", "--only", "counters", "."); err != nil {
		t.Fatalf("the merge: %v\n%s", err, out)
	}
	before := strings.Split(handFormatted, "\n")
	after := strings.Split(readFile(t, filepath.Join(app, "firestore.indexes.json")), "\n")
	i := 0
	for _, line := range after {
		if i < len(before) && (line == before[i] || line == before[i]+",") {
			i++
		}
	}
	if i != len(before) || len(after) <= len(before) {
		t.Errorf("the merge changed lines of the app's (kept %d of %d in order):\n%s", i, len(before), strings.Join(after, "\n"))
	}
	if !strings.Contains(strings.Join(after, "\n"), "\n        {\n            \"collectionGroup\": \"windows\",") {
		t.Errorf("shardcount's entries are not in the app's four-space style:\n%s", strings.Join(after, "\n"))
	}
	settings := filepath.Join(app, "shardcount.env.yaml")
	if s := readFile(t, settings); !strings.Contains(s, "COUNTER_KINDS: '{\"likes\": {\"unique\": true}, \"views\": {}}'") {
		t.Errorf("the settings file the merge created:\n%s", s)
	}
	os.WriteFile(settings, []byte("COUNTER_KINDS: '{\"polls\": {}}'\n"), 0o644)
	if out, err := script(t, app, nil, "firebase-merge.sh", "--only", "counters", "."); err != nil || readFile(t, settings) != "COUNTER_KINDS: '{\"polls\": {}}'\n" {
		t.Errorf("a second merge overwrote the app's settings file (%v):\n%s", err, out)
	}
}

// TestTheSettingsFileDrivesTheDeploy: from the app's own directory, the
// plan deploys the file's kinds whatever the shell holds, says where its
// settings come from in its first line, and its commands work from any
// directory; the shell cannot replace a setting of the file's.
func TestTheSettingsFileDrivesTheDeploy(t *testing.T) {
	app := newApp(t)
	if out, err := script(t, app, nil, "firebase-merge.sh", "--only", "counters", "."); err != nil {
		t.Fatalf("the merge: %v\n%s", err, out)
	}
	kinds := `{"likes": {"unique": true, "num_shards": 8}, "views": {}}`
	os.WriteFile(filepath.Join(app, "shardcount.env.yaml"), []byte("COUNTER_KINDS: '"+kinds+"'\nCORS_ORIGINS: 'https://myapp.example.com'\n"), 0o644)
	plan, err := script(t, app, nil, "deploy.sh", "--dry-run", "--project", "demo-x", "--only", "counters", "--firestore-from", ".")
	if err != nil {
		t.Fatalf("the plan: %v\n%s", err, plan)
	}
	first := plan[strings.Index(plan, "# Deploy plan"):]
	if first = first[:strings.Index(first, "\n")]; !strings.Contains(first, filepath.Join(app, "shardcount.env.yaml")) {
		t.Errorf("the plan's first line does not name the settings file: %s", first)
	}
	lines := deployLines(t, plan)
	if len(lines) == 0 {
		t.Fatalf("no function in the plan:\n%s", plan)
	}
	for name, args := range lines {
		env := args[slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--set-env-vars=") })]
		if !strings.Contains(env, ";COUNTER_KINDS="+kinds) || !strings.Contains(env, ";CORS_ORIGINS=https://myapp.example.com") {
			t.Errorf("%s is not deployed with the file's settings: %s", name, env)
		}
		for _, a := range args {
			if src, ok := strings.CutPrefix(a, "--source="); ok && (!filepath.IsAbs(src) || readFile(t, filepath.Join(src, "go.mod")) == "") {
				t.Errorf("%s's source %q is not shardcount's checkout, absolute", name, src)
			}
		}
	}
	if !strings.Contains(plan, "kinds likes: unique (each user once); views: plain (every increment)") {
		t.Errorf("the dry run does not say which deployed kinds a real run compares:\n%s", plan)
	}

	// The same kinds from the shell pass; other kinds are refused, naming
	// the file; a file per environment is named with --settings.
	if out, err := script(t, app, []string{"COUNTER_KINDS=" + kinds}, "deploy.sh", "--dry-run", "--project", "demo-x", "--only", "counters", "--firestore-from", "."); err != nil {
		t.Errorf("the file's own kinds in the shell: %v\n%s", err, out)
	}
	out, err := script(t, app, []string{"COUNTER_KINDS={}"}, "deploy.sh", "--dry-run", "--project", "demo-x", "--only", "counters", "--firestore-from", ".")
	if err == nil || !strings.Contains(out, "COUNTER_KINDS is set in this shell ('{}'), and "+filepath.Join(app, "shardcount.env.yaml")) {
		t.Errorf("other kinds in the shell: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(app, "shardcount.staging.env.yaml"), []byte("COUNTER_KINDS: '{\"views\": {}}'\n"), 0o644)
	staging, err := script(t, app, nil, "deploy.sh", "--dry-run", "--project", "demo-x", "--only", "counters", "--firestore-from", ".", "--settings", "shardcount.staging.env.yaml")
	if err != nil || !strings.Contains(staging, `;COUNTER_KINDS={"views": {}}`) {
		t.Errorf("--settings shardcount.staging.env.yaml: %v\n%s", err, staging)
	}

	// The plan pasted into another directory: a stand-in gcloud that
	// checks every source it is given holds shardcount's go.mod.
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	standInGcloud(t, bin, calls)
	wrapped := "#!/bin/sh\ncase \"$*\" in *--source=*) src=$(printf '%s\\n' \"$@\" | sed -n 's/^--source=//p'); [ -f \"$src/go.mod\" ] || { echo \"no go.mod in $src\" >&2; exit 1; } ;; esac\nexec " + filepath.Join(bin, "gcloud") + " \"$@\"\n"
	os.MkdirAll(filepath.Join(bin, "wrapped"), 0o755)
	os.WriteFile(filepath.Join(bin, "wrapped", "gcloud"), []byte(wrapped), 0o755)
	os.Link(filepath.Join(bin, "curl"), filepath.Join(bin, "wrapped", "curl"))
	elsewhere := t.TempDir()
	paste := exec.Command("bash", "-c", plan[strings.Index(plan, "# Deploy plan"):])
	paste.Dir = elsewhere
	paste.Env = append(os.Environ(), "PATH="+filepath.Join(bin, "wrapped")+":"+os.Getenv("PATH"))
	if out, err := paste.CombinedOutput(); err != nil {
		t.Errorf("the plan pasted in another directory: %v\n%s", err, out)
	}
	if n := strings.Count(readFile(t, calls), "functions deploy"); n != len(lines) {
		t.Errorf("the pasted plan deployed %d functions, want %d", n, len(lines))
	}
}

// TestNoDeployDropsAKind: a real deploy against a stand-in gcloud whose
// deployed functions count a kind the file lacks (or count one
// otherwise, or keep their counters in another database) exits non-zero,
// names it, and deploys nothing; with --allow-kind-changes it goes ahead;
// functions not deployed yet are no refusal, and a deployment gcloud
// cannot read is one.
func TestNoDeployDropsAKind(t *testing.T) {
	deployed := func(env map[string]string) string {
		var fns []any
		for _, spec := range service.Catalog {
			if spec.Group == service.Counters {
				fns = append(fns, map[string]any{"name": "projects/demo-x/locations/us-central1/functions/" + spec.Name,
					"serviceConfig": map[string]any{"environmentVariables": env}})
			}
		}
		b, _ := json.Marshal(fns)
		return string(b)
	}
	kinds := func(k string) map[string]string {
		return map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "COUNTER_KINDS": k}
	}
	settings := settingsFile(t, `COUNTER_KINDS={"likes": {"unique": true}}`)
	for _, tc := range []struct {
		name    string
		env     []string
		args    []string
		refused string // what the refusal names; "" when the deploy goes ahead
	}{
		{"a kind dropped", []string{"DEPLOYED=" + deployed(kinds(`{"likes": {"unique": true}, "polls": {}}`))}, nil, `the kind "polls"`},
		{"a kind counted otherwise", []string{"DEPLOYED=" + deployed(kinds(`{"likes": {}}`))}, nil, `the kind "likes" plain (every increment)`},
		{"another database", []string{"DEPLOYED=" + deployed(map[string]string{"COUNTER_KINDS": `{"likes": {"unique": true}}`, "FIRESTORE_DATABASE": "counters"})}, nil, "keeps its counters in the database counters"},
		{"a deployed kind unreadable", []string{"DEPLOYED=" + deployed(kinds(`{"likes": {"unique": "yes"}}`))}, nil, "cannot read"},
		{"gcloud cannot read them", []string{"LIST_ERROR=PERMISSION_DENIED: the caller does not have permission"}, nil, "PERMISSION_DENIED"},
		{"dropped on purpose", []string{"DEPLOYED=" + deployed(kinds(`{"likes": {"unique": true}, "polls": {}}`))}, []string{"--allow-kind-changes"}, ""},
		{"the same kinds", []string{"DEPLOYED=" + deployed(kinds(`{"likes": {"unique": true}}`))}, nil, ""},
		{"nothing deployed yet", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			calls := filepath.Join(bin, "calls")
			standInGcloud(t, bin, calls)
			cmd := exec.Command("bash", append([]string{"scripts/deploy.sh", "--project", "demo-x", "--force", "--only", "counters", "--settings", settings}, tc.args...)...)
			cmd.Dir = root
			cmd.Env = append(append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PAGE_TOKEN_SECRET="), tc.env...)
			out, err := cmd.CombinedOutput()
			log := readFileOr(calls)
			if tc.refused != "" {
				if err == nil || !strings.Contains(string(out), tc.refused) || strings.Contains(log, "functions deploy") {
					t.Errorf("%v\n%s\ngcloud calls:\n%s", err, out, log)
				}
				return
			}
			if err != nil || !strings.Contains(string(out), "deployed to demo-x") || !strings.Contains(log, "functions deploy incrementCounter") {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

func readFileOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestWarningsStay: a merge that finds the app's files up to date prints
// the warnings the first one printed, and names the app's collections
// shardcount's collection-group rule and field overrides also apply to.
func TestWarningsStay(t *testing.T) {
	app := newApp(t)
	rules := readFile(t, filepath.Join(app, "firestore.rules"))
	rules = strings.Replace(rules, "match /posts/{postId} {", "match /{document=**} {\n      allow read: if request.auth != null;\n    }\n    match /groups/{g}/members/{uid} {\n      allow read: if true;\n    }\n    match /posts/{postId} {", 1)
	os.WriteFile(filepath.Join(app, "firestore.rules"), []byte(rules), 0o644)
	indexes := strings.Replace(handFormatted, `"collectionGroup": "posts",
            "indexes": []`, `"collectionGroup": "posts",
            "indexes": []
        },
        {
            "fieldPath": "title",
            "collectionGroup": "windows",
            "indexes": []`, 1)
	os.WriteFile(filepath.Join(app, "firestore.indexes.json"), []byte(indexes), 0o644)
	for i, args := range [][]string{{"--only", "counters", "."}, {"--only", "counters", "."}, {"--check", "--only", "counters", "."}} {
		out, _ := script(t, app, nil, "firebase-merge.sh", args...)
		if i > 0 && !strings.Contains(out, "up to date") && args[0] != "--check" {
			t.Errorf("run %d found the files changed:\n%s", i+1, out)
		}
		for _, want := range []string{"`match /{document=**}` also matches shardcount's counters/{id}",
			"names a collection `members` of the app's, and every collection of that name, the app's too, gets shardcount's collection-group rule",
			"names a collection `windows` of the app's, and every collection of that name, the app's too, gets shardcount's TTL policy on expire_at"} {
			if !strings.Contains(out, want) {
				t.Errorf("run %d (%v) does not warn %q:\n%s", i+1, args, want, out)
			}
		}
	}
}

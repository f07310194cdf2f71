// Package deploy checks offline what would happen on Google Cloud: the
// commands scripts/deploy.sh runs, and that the source builds and serves each
// function the way the Cloud Functions Go buildpack builds and runs it.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/functions"
	"github.com/shardcount/shardcount/internal/indexcheck"
)

// root is the repository.
var root, _ = filepath.Abs("../..")

// dryRun runs scripts/deploy.sh --dry-run with extra arguments and
// environment, and returns its output and error.
func dryRun(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"scripts/deploy.sh", "--dry-run"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// fields splits a command line of the plan (single quotes only).
func fields(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' && !quoted:
			quoted, any = true, true
		case c == '\'' && quoted:
			quoted = false
		case c == '\\' && !quoted && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == ' ' && !quoted:
			if any || cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteByte(c)
		}
	}
	if any || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// deployLines returns the arguments of each `gcloud functions deploy` line,
// by function name.
func deployLines(t *testing.T, plan string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range strings.Split(plan, "\n") {
		if f := fields(line); len(f) > 4 && f[0] == "gcloud" && f[1] == "functions" && f[2] == "deploy" {
			if _, dup := out[f[3]]; dup {
				t.Errorf("%s is deployed twice", f[3])
			}
			out[f[3]] = f[4:]
		}
	}
	return out
}

func TestDryRunDeploysEveryFunctionOfTheCatalog(t *testing.T) {
	plan, err := dryRun(t, []string{"CORS_ORIGINS=https://a.example.com,https://b.example.com", "ROLLUP_CADENCE=2s"},
		"--project", "demo-x", "--region", "us-central1")
	if err != nil {
		t.Fatalf("deploy.sh --dry-run: %v\n%s", err, plan)
	}
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	m := regexp.MustCompile(`(?m)^go 1\.(\d+)`).FindSubmatch(gomod)
	runtime := "--runtime=go1" + string(m[1])

	lines := deployLines(t, plan)
	if len(lines) != len(functions.Catalog) {
		t.Errorf("%d functions deployed, the catalog has %d", len(lines), len(functions.Catalog))
	}
	for _, spec := range functions.Catalog {
		args, ok := lines[spec.Name]
		if !ok {
			t.Errorf("%s is not deployed", spec.Name)
			continue
		}
		want := []string{"--gen2", "--project=demo-x", "--region=us-central1", runtime, "--source=.",
			"--entry-point=" + spec.Name,
			"--set-env-vars=^;^GOOGLE_CLOUD_PROJECT=demo-x;AUTH=required;CORS_ORIGINS=https://a.example.com,https://b.example.com;ROLLUP_CADENCE=2s"}
		switch {
		case spec.Kind == functions.HTTPTrigger && spec.Access == functions.Public:
			want = append(want, "--trigger-http", "--allow-unauthenticated")
		case spec.Kind == functions.HTTPTrigger:
			want = append(want, "--trigger-http", "--no-allow-unauthenticated")
		case spec.Kind == functions.FirestoreTrigger:
			want = append(want,
				"--trigger-event-filters=type=google.cloud.firestore.document.v1.written",
				"--trigger-event-filters=database=(default)",
				"--trigger-event-filters-path-pattern=document=counters/{counterId}/shards/{shardId}",
				"--retry", "--concurrency=1")
		}
		for _, w := range want {
			if !slices.Contains(args, w) {
				t.Errorf("%s: no %s in %v", spec.Name, w, args)
			}
		}
		if spec.Kind == functions.FirestoreTrigger && slices.Contains(args, "--trigger-http") {
			t.Errorf("%s is an event function deployed with --trigger-http", spec.Name)
		}
	}
	if !strings.Contains(plan, "firebase deploy --only firestore:rules,firestore:indexes --project demo-x") {
		t.Errorf("rules and indexes are not deployed with the Firebase CLI:\n%s", plan)
	}
	if !strings.Contains(plan, "gcloud scheduler jobs create http reconcile-counters") {
		t.Errorf("reconcileCounters is not scheduled:\n%s", plan)
	}
}

func TestDryRunWithoutFirebaseCLIUsesGcloud(t *testing.T) {
	plan, err := dryRun(t, []string{"FIREBASE_CLI="}, "--project=demo-x")
	if err != nil {
		t.Fatalf("%v\n%s", err, plan)
	}
	file, err := indexcheck.Load(filepath.Join(root, "firestore.indexes.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range file.Indexes {
		var cfg []string
		for _, f := range ix.Fields {
			cfg = append(cfg, "--field-config=field-path="+f.FieldPath+",order="+strings.ToLower(f.Order))
		}
		if !strings.Contains(plan, "--collection-group="+ix.CollectionGroup+" --query-scope=collection --async "+strings.Join(cfg, " ")) {
			t.Errorf("no gcloud command creates the index %v", ix)
		}
	}
	for _, o := range file.FieldOverrides {
		if !strings.Contains(plan, "fields update "+o.FieldPath+" --project=demo-x --collection-group="+o.CollectionGroup+" --disable-indexes") {
			t.Errorf("the single-field indexes of %s.%s are not disabled", o.CollectionGroup, o.FieldPath)
		}
		if o.TTL && !strings.Contains(plan, "ttls update "+o.FieldPath+" --project=demo-x --collection-group="+o.CollectionGroup+" --enable-ttl") {
			t.Errorf("no TTL policy on %s.%s", o.CollectionGroup, o.FieldPath)
		}
	}
	if !strings.Contains(plan, "firebaserules.googleapis.com/v1/projects/demo-x/rulesets") ||
		!strings.Contains(plan, "releases/cloud.firestore") || !strings.Contains(plan, "anonymousCounterReads") {
		t.Errorf("firestore.rules is not released through the Rules API:\n%s", plan)
	}
}

func TestDryRunOnlyOneFunction(t *testing.T) {
	plan, err := dryRun(t, nil, "--project", "demo-x", "--only", "getCounter")
	if err != nil {
		t.Fatalf("%v\n%s", err, plan)
	}
	if lines := deployLines(t, plan); len(lines) != 1 || lines["getCounter"] == nil {
		t.Errorf("--only getCounter deploys %v", lines)
	}
	if strings.Contains(plan, "firestore:rules") || strings.Contains(plan, "scheduler") {
		t.Errorf("--only getCounter also deploys rules or the scheduler:\n%s", plan)
	}
}

func TestDryRunRefusesBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		env     []string
		args    []string
		mention string
	}{
		"unknown function": {nil, []string{"--project", "demo-x", "--only", "nope"}, "createCounter"},
		"no project":       {[]string{"PROJECT_ID=", "GOOGLE_CLOUD_PROJECT="}, nil, "project"},
		"bad project":      {nil, []string{"--project", "Not A Project"}, "project"},
		"wildcard origin":  {[]string{"CORS_ORIGINS=*"}, []string{"--project", "demo-x"}, "CORS_ORIGINS"},
		"bad cadence":      {[]string{"ROLLUP_CADENCE=soon"}, []string{"--project", "demo-x"}, "ROLLUP_CADENCE"},
		"unknown argument": {nil, []string{"--project", "demo-x", "--yes"}, "unknown argument"},
		"bad AUTH":         {[]string{"AUTH=maybe"}, []string{"--project", "demo-x"}, "AUTH"},
	} {
		out, err := dryRun(t, tc.env, tc.args...)
		if err == nil || !strings.Contains(out, tc.mention) {
			t.Errorf("%s: err %v, output mentions %q? %s", name, err, tc.mention, out)
		}
	}
}

// TestDeployRefusesUncommittedChanges runs a real (not dry) deploy in a
// clone with a modified file. Nothing can reach Google Cloud here, so gcloud
// is a stand-in that records its calls: it must not be called at all, and
// with --force it must receive the plan's commands.
func TestDeployRefusesUncommittedChanges(t *testing.T) {
	clone := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	// The clone has what is committed; make it dirty.
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	gcloud := "#!/bin/sh\necho \"$*\" >> " + calls + "\ncase \"$*\" in *describe*) echo 123;; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "gcloud"), []byte(gcloud), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"scripts/deploy.sh", "--project", "demo-x"}, args...)...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FIREBASE_CLI=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "uncommitted changes") {
		t.Fatalf("deploy with uncommitted changes: err %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Fatal("gcloud was called although the deploy refused")
	}

	out, err = run("--force", "--only", "rollupCounter")
	if err != nil {
		t.Fatalf("deploy --force: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(calls)
	if !strings.HasPrefix(string(got), "functions deploy rollupCounter --gen2") || strings.Count(string(got), "\n") != 1 {
		t.Errorf("gcloud calls:\n%s", got)
	}
}

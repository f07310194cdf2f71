// Package deploy checks offline what would happen on Google Cloud: the
// commands scripts/deploy.sh runs, and that the source builds and serves each
// function the way the Cloud Functions Go buildpack builds and runs it.
package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/indexcheck"
	"github.com/shardcount/shardcount/internal/service"
)

// root is the repository.
var root, _ = filepath.Abs("../..")

// settingsFile writes a settings file (shardcount.env.yaml) holding the
// settings of kv ("KEY=value") and returns its path.
func settingsFile(t *testing.T, kv ...string) string {
	t.Helper()
	var b strings.Builder
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		fmt.Fprintf(&b, "%s: '%s'\n", k, strings.ReplaceAll(v, "'", "''"))
	}
	path := filepath.Join(t.TempDir(), "shardcount.env.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// dryRun runs scripts/deploy.sh --dry-run with extra arguments and
// environment, and returns its output and error.
func dryRun(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"scripts/deploy.sh", "--dry-run"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "PAGE_TOKEN_SECRET=page-token"), env...)
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
	plan, err := dryRun(t, nil, "--project", "demo-x", "--region", "us-central1",
		"--settings", settingsFile(t, "CORS_ORIGINS=https://a.example.com,https://b.example.com", "ROLLUP_CADENCE=2s"))
	if err != nil {
		t.Fatalf("deploy.sh --dry-run: %v\n%s", err, plan)
	}
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	m := regexp.MustCompile(`(?m)^go 1\.(\d+)`).FindSubmatch(gomod)
	runtime := "--runtime=go1" + string(m[1])

	lines := deployLines(t, plan)
	if len(lines) != len(service.Catalog) {
		t.Errorf("%d functions deployed, the catalog has %d", len(lines), len(service.Catalog))
	}
	for _, spec := range service.Catalog {
		args, ok := lines[spec.Name]
		if !ok {
			t.Errorf("%s is not deployed", spec.Name)
			continue
		}
		want := []string{"--gen2", "--project=demo-x", "--region=us-central1", runtime, "--source=" + root,
			"--entry-point=" + spec.Name,
			"--set-env-vars=^;^GOOGLE_CLOUD_PROJECT=demo-x;CORS_ORIGINS=https://a.example.com,https://b.example.com;ROLLUP_CADENCE=2s",
			// The key is read from Secret Manager, never passed as a value.
			"--set-secrets=PAGE_TOKEN_SECRET=page-token:latest",
			// Every function, the roll-up too, takes concurrent requests.
			"--concurrency=80", "--cpu=1"}
		switch {
		case spec.Kind == service.HTTPTrigger && spec.Access == service.Public:
			// FIRESTORE_DEADLINE (10s) + 5 s: a hanging call answers 503 first.
			want = append(want, "--trigger-http", "--allow-unauthenticated", "--timeout=15s")
		case spec.Kind == service.HTTPTrigger:
			// RECONCILE_BUDGET (4m) + 2 × FIRESTORE_DEADLINE + 30 s.
			want = append(want, "--trigger-http", "--no-allow-unauthenticated", "--timeout=290s")
		case spec.Kind == service.FirestoreTrigger:
			want = append(want,
				"--trigger-event-filters=type=google.cloud.firestore.document.v1.written",
				"--trigger-event-filters=database=(default)",
				"--trigger-event-filters-path-pattern=document=counters/{counterId}/shards/{shardId}",
				"--retry",
				// 3 × ROLLUP_CADENCE (2s) + 2 × FIRESTORE_DEADLINE + 30 s.
				"--timeout=56s")
		}
		for _, w := range want {
			if !slices.Contains(args, w) {
				t.Errorf("%s: no %s in %v", spec.Name, w, args)
			}
		}
		if spec.Kind == service.FirestoreTrigger && slices.Contains(args, "--trigger-http") {
			t.Errorf("%s is an event function deployed with --trigger-http", spec.Name)
		}
	}
	// The rules are not replaced without a flag; the indexes and TTL
	// policies are added (never removing any).
	if strings.Contains(plan, "firestore:rules") || strings.Contains(plan, "firebaserules") || !strings.Contains(plan, "scripts/firebase-merge.sh") {
		t.Errorf("a plain deploy touches the project's rules, or does not say how to merge them:\n%s", plan)
	}
	if !strings.Contains(plan, "gcloud firestore fields ttls update expire_at --project=demo-x '--database=(default)' --collection-group=windows --enable-ttl") {
		t.Errorf("the TTL policies are not added:\n%s", plan)
	}
	if !strings.Contains(plan, "gcloud scheduler jobs create http reconcile-counters") || !strings.Contains(plan, "--attempt-deadline=290s") {
		t.Errorf("reconcileCounters is not scheduled with an attempt deadline covering a run (290s):\n%s", plan)
	}
	if strings.Contains(plan, "page-token:") && strings.Contains(plan, "PAGE_TOKEN_SECRET=page-token;") {
		t.Errorf("the secret's name is passed as a plain value:\n%s", plan)
	}
}

// TestDryRunReplaceRulesUsesGcloudAndTheRulesAPI: one plan, whatever is
// installed: the indexes with gcloud, the rules through the Rules API.
func TestDryRunReplaceRulesUsesGcloudAndTheRulesAPI(t *testing.T) {
	plan, err := dryRun(t, nil, "--project=demo-x", "--replace-rules")
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
		scope := strings.ToLower(strings.ReplaceAll(ix.QueryScope, "_", "-"))
		if !strings.Contains(plan, " gcloud firestore indexes composite create --project=demo-x '--database=(default)' --collection-group="+ix.CollectionGroup+" --query-scope="+scope+" --async "+strings.Join(cfg, " ")) {
			t.Errorf("no gcloud command creates the index %v", ix)
		}
	}
	for _, o := range file.FieldOverrides {
		if !strings.Contains(plan, "fields update "+o.FieldPath+" --project=demo-x '--database=(default)' --collection-group="+o.CollectionGroup+" --disable-indexes") {
			t.Errorf("the single-field indexes of %s.%s are not disabled", o.CollectionGroup, o.FieldPath)
		}
		if o.TTL && !strings.Contains(plan, "ttls update "+o.FieldPath+" --project=demo-x '--database=(default)' --collection-group="+o.CollectionGroup+" --enable-ttl") {
			t.Errorf("no TTL policy on %s.%s", o.CollectionGroup, o.FieldPath)
		}
	}
	if !strings.Contains(plan, "firebaserules.googleapis.com/v1/projects/demo-x/rulesets") ||
		!strings.Contains(plan, "releases/cloud.firestore") || !strings.Contains(plan, "shardcountAnonymousCounterReads") {
		t.Errorf("firestore.rules is not released through the Rules API:\n%s", plan)
	}
	if strings.Contains(plan, "|| true") {
		t.Errorf("the plan hides failures with || true:\n%s", plan)
	}
	withCLI, err := dryRun(t, []string{"PATH=" + t.TempDir() + ":" + os.Getenv("PATH")}, "--project=demo-x", "--replace-rules")
	if err != nil || withCLI != plan {
		t.Errorf("the plan depends on what is installed (%v)", err)
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
	settings := func(kv ...string) []string {
		return []string{"--project", "demo-x", "--settings", settingsFile(t, kv...)}
	}
	for name, tc := range map[string]struct {
		env     []string
		args    []string
		mention string
	}{
		"unknown function":     {nil, []string{"--project", "demo-x", "--only", "nope"}, "createCounter"},
		"both rules flags":     {nil, []string{"--project", "demo-x", "--replace-rules", "--firestore-from", "."}, "exclusive"},
		"cadence past 540 s":   {nil, settings("ROLLUP_CADENCE=1m", "FIRESTORE_DEADLINE=5m"), "an event function may run"},
		"no project":           {[]string{"PROJECT_ID=", "GOOGLE_CLOUD_PROJECT="}, nil, "project"},
		"bad project":          {nil, []string{"--project", "Not A Project"}, "project"},
		"wildcard origin":      {nil, settings("CORS_ORIGINS=*"), "CORS_ORIGINS"},
		"bad cadence":          {nil, settings("ROLLUP_CADENCE=soon"), "ROLLUP_CADENCE"},
		"unknown argument":     {nil, []string{"--project", "demo-x", "--yes"}, "unknown argument"},
		"bad AUTH":             {nil, settings("AUTH=maybe"), "AUTH"},
		"no page-token secret": {[]string{"PAGE_TOKEN_SECRET="}, []string{"--project", "demo-x"}, "PAGE_TOKEN_SECRET"},
		"bad secret name":      {[]string{"PAGE_TOKEN_SECRET=not a name"}, []string{"--project", "demo-x"}, "PAGE_TOKEN_SECRET"},
		"AUTH=off, not open":   {nil, settings("AUTH=off"), "--insecure-open"},
		"AUTH=Off, not open":   {nil, settings("AUTH=Off"), "--insecure-open"},
		"bad deadline":         {nil, settings("FIRESTORE_DEADLINE=1h"), "FIRESTORE_DEADLINE"},
		"no settings file":     {nil, []string{"--project", "demo-x", "--settings", "/nonexistent/shardcount.env.yaml"}, "does not exist"},
		"a secret in the file": {nil, settings("PAGE_TOKEN_SECRET=page-token"), "Secret Manager"},
		"an unknown setting":   {nil, settings("COUNTER_KIND={}"), "COUNTER_KIND (line 1): not a setting"},
		"a setting in the shell, no file": {[]string{"ROLLUP_CADENCE=2s"}, []string{"--project", "demo-x"},
			"ROLLUP_CADENCE is set in this shell ('2s'), and settings come from shardcount.env.yaml"},
	} {
		out, err := dryRun(t, tc.env, tc.args...)
		if err == nil || !strings.Contains(out, tc.mention) {
			t.Errorf("%s: err %v, output mentions %q? %s", name, err, tc.mention, out)
		}
	}
}

func TestDryRunOpenDeployNeedsInsecureOpen(t *testing.T) {
	plan, err := dryRun(t, nil, "--project", "demo-x", "--insecure-open", "--settings", settingsFile(t, "AUTH=off"))
	if err != nil {
		t.Fatalf("%v\n%s", err, plan)
	}
	if !strings.Contains(plan, "AUTH=off") {
		t.Errorf("AUTH=off is not deployed:\n%s", plan)
	}
}

func TestSecretNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"page-token", "PAGE_TOKEN_SECRET=page-token:latest"},
		{"page-token:3", "PAGE_TOKEN_SECRET=page-token:3"},
		{"projects/demo-x/secrets/page-token", "PAGE_TOKEN_SECRET=page-token:latest"},
		{"projects/other-project/secrets/k", "PAGE_TOKEN_SECRET=projects/other-project/secrets/k:latest"},
	} {
		plan, err := dryRun(t, []string{"PAGE_TOKEN_SECRET=" + tc.in}, "--project", "demo-x", "--only", "getCounter")
		if err != nil || !strings.Contains(plan, "--set-secrets="+tc.want) {
			t.Errorf("PAGE_TOKEN_SECRET=%s: err %v, plan does not hold --set-secrets=%s:\n%s", tc.in, err, tc.want, plan)
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
	standInGcloud(t, bin, calls)
	run := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"scripts/deploy.sh", "--project", "demo-x"}, args...)...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PAGE_TOKEN_SECRET=page-token")
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
	if !strings.HasPrefix(string(got), "functions list --project=demo-x --regions=us-central1") || !strings.Contains(string(got), "\nfunctions deploy rollupCounter --gen2") || strings.Count(string(got), "functions deploy") != 1 {
		t.Errorf("gcloud calls:\n%s", got)
	}
}

// standInGcloud writes a gcloud that records its calls and answers like
// the real one where the plan depends on it: `functions list` prints the
// functions as deployed (the JSON in $DEPLOYED, none when it is unset),
// `describe` prints a value,
// `scheduler jobs update` fails for a job that does not exist and rejects
// --headers (it takes --update-headers), `scheduler jobs create` fails
// for a job that exists, and so does creating an index that exists.
func standInGcloud(t *testing.T, bin, calls string) {
	t.Helper()
	jobs, indexes := filepath.Join(bin, "jobs"), filepath.Join(bin, "indexes")
	script := `#!/bin/sh
echo "$*" >> ` + calls + `
case "$*" in
  "functions list"*)
    [ -z "$LIST_ERROR" ] || { echo "ERROR: $LIST_ERROR" >&2; exit 1; }
    printf '%s\n' "${DEPLOYED:-[]}" ;;
  "scheduler jobs describe"*) grep -qx "$4" ` + jobs + ` 2>/dev/null || { echo "ERROR: NOT_FOUND: Job not found." >&2; exit 1; } ;;
  *describe*) echo 123 ;;
  "firestore indexes composite create"*)
    [ -z "$INDEX_ERROR" ] || { echo "ERROR: $INDEX_ERROR" >&2; exit 1; }
    grep -qxF "$*" ` + indexes + ` 2>/dev/null && { echo "ERROR: (gcloud.firestore.indexes.composite.create) ALREADY_EXISTS: index already exists" >&2; exit 1; }
    echo "$*" >> ` + indexes + ` ;;
  "scheduler jobs update"*)
    case "$*" in *" --headers="*) echo "ERROR: unrecognized arguments: --headers" >&2; exit 2;; esac
    grep -qx "$5" ` + jobs + ` 2>/dev/null || { echo "ERROR: NOT_FOUND: Job not found." >&2; exit 1; } ;;
  "scheduler jobs create"*)
    case "$*" in *" --update-headers="*) echo "ERROR: unrecognized arguments: --update-headers" >&2; exit 2;; esac
    grep -qx "$5" ` + jobs + ` 2>/dev/null && { echo "ERROR: ALREADY_EXISTS: Job already exists." >&2; exit 1; }
    echo "$5" >> ` + jobs + ` ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "gcloud"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The Rules API, reached with curl when there is no Firebase CLI.
	curl := "#!/bin/sh\necho \"curl $*\" >> " + calls + "\necho '{\"name\": \"projects/demo-x/rulesets/r1\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(curl), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestRedeployUpdatesTheSchedulerJob deploys twice in a row with the
// stand-in gcloud: the first creates the reconcile job, the second updates
// it, and both get through to the rules and indexes at the end.
func TestRedeployUpdatesTheSchedulerJob(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	standInGcloud(t, bin, calls)
	for i := range 2 {
		cmd := exec.Command("bash", "scripts/deploy.sh", "--project", "demo-x", "--force", "--replace-rules")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PAGE_TOKEN_SECRET=page-token")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "deployed to demo-x") {
			t.Fatalf("deploy %d: %v\n%s", i+1, err, out)
		}
		if strings.Contains(string(out), "ERROR") {
			t.Errorf("deploy %d printed an ERROR:\n%s", i+1, out)
		}
		if i == 1 && !strings.Contains(string(out), "exists already: windows (granularity ascending, start ascending, ") {
			t.Errorf("the second deploy does not name the indexes that exist by their fields:\n%s", out)
		}
	}
	got, _ := os.ReadFile(calls)
	log := string(got)
	if n := strings.Count(log, "scheduler jobs create http reconcile-counters"); n != 1 {
		t.Errorf("the job was created %d times, want once:\n%s", n, log)
	}
	if !strings.Contains(log, "scheduler jobs update http reconcile-counters") || strings.Count(log, "curl -sSf -X PATCH") != 2 {
		t.Errorf("the second deploy did not update the job and go on to the indexes:\n%s", log)
	}
}

// TestIndexFailuresStopTheDeploy: an index that exists already is fine
// (TestRedeployUpdatesTheSchedulerJob), any other failure stops the
// deploy and is shown; it used to be hidden by `|| true`.
func TestIndexFailuresStopTheDeploy(t *testing.T) {
	bin := t.TempDir()
	standInGcloud(t, bin, filepath.Join(bin, "calls"))
	cmd := exec.Command("bash", "scripts/deploy.sh", "--project", "demo-x", "--force", "--only", "counters")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PAGE_TOKEN_SECRET=",
		"INDEX_ERROR=PERMISSION_DENIED: the caller does not have permission")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PERMISSION_DENIED") || strings.Contains(string(out), "deployed to demo-x") {
		t.Errorf("a failed index creation: %v\n%s", err, out)
	}
}

// TestDryRunOnlyCountersNeedsNoSecret: an app that wants counters deploys
// their functions, trigger, job and indexes, and no secret.
func TestDryRunOnlyCountersNeedsNoSecret(t *testing.T) {
	plan, err := dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "counters")
	if err != nil {
		t.Fatalf("--only counters without PAGE_TOKEN_SECRET: %v\n%s", err, plan)
	}
	lines := deployLines(t, plan)
	for _, spec := range service.Catalog {
		if _, ok := lines[spec.Name]; ok != (spec.Group == service.Counters) {
			t.Errorf("--only counters: %s deployed %v", spec.Name, ok)
		}
	}
	if strings.Contains(plan, "--set-secrets") || strings.Contains(plan, "instruments") || !strings.Contains(plan, "reconcile-counters") {
		t.Errorf("--only counters plans a secret, an instruments index, or no job:\n%s", plan)
	}
	plan, err = dryRun(t, nil, "--project", "demo-x", "--only", "instruments,getCounter")
	if lines := deployLines(t, plan); err != nil || len(lines) != 3 || lines["getCounter"] == nil || lines["queryInstruments"] == nil {
		t.Errorf("--only instruments,getCounter deploys %v (%v)", lines, err)
	}
	if _, err := dryRun(t, []string{"PAGE_TOKEN_SECRET="}, "--project", "demo-x", "--only", "queryInstruments"); err == nil {
		t.Error("queryInstruments was planned without PAGE_TOKEN_SECRET")
	}
}

// TestDryRunFirestoreFromAnApp: a sample app's directory takes the merge,
// then deploys its own rules and indexes, which now hold shardcount's; an
// app that was not merged is refused, and told the command that merges.
// TestAdoptingFromTheAppsDirectory is a newcomer's adoption, from their
// app's own directory next to a checkout of shardcount, with relative
// paths: an app whose firebase.json keeps its rules under firestore/ and
// has hosting and functions of its own. The merge writes the files
// firebase.json names (not shardcount's, not a new root file), the check
// passes on them and on shardcount's own, and the deploy plan deploys
// exactly the app's files, with nothing of the instruments example.
// rulesetOf returns the rules the plan's Rules API call uploads.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScriptsIgnoreCDPATH: with CDPATH set, `cd app` may go to another
// directory named app, and prints it, which $(cd app && pwd) captured too.
// TestRulesWithASpaceInTheirPath: the emulator's launcher splits its
// arguments at spaces, so an app under "My Projects/" could not be run
// with dev.sh --firestore-from; scripts/lib.sh reaches such a file
// through a link.
// TestMergingIntoShardcountItselfIsRefused: run from shardcount's checkout
// with ".", the merge rewrote shardcount's own files, its source.

// TestDryRunNamedDatabase: with FIRESTORE_DATABASE the functions keep
// their documents in that database, the roll-up's trigger takes its
// writes, and the indexes, TTL policies and rules go to it.
func TestDryRunNamedDatabase(t *testing.T) {
	plan, err := dryRun(t, nil, "--project=demo-x", "--replace-rules", "--settings", settingsFile(t, "FIRESTORE_DATABASE=counters-db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, plan)
	}
	lines := deployLines(t, plan)
	for _, spec := range service.Catalog {
		if args := lines[spec.Name]; !slices.ContainsFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "--set-env-vars=") && strings.Contains(a, ";FIRESTORE_DATABASE=counters-db")
		}) {
			t.Errorf("%s is not deployed with FIRESTORE_DATABASE=counters-db: %v", spec.Name, args)
		}
		if spec.Kind == service.FirestoreTrigger && !slices.Contains(lines[spec.Name], "--trigger-event-filters=database=counters-db") {
			t.Errorf("%s does not take the writes of counters-db: %v", spec.Name, lines[spec.Name])
		}
	}
	for _, want := range []string{"indexes composite create --project=demo-x --database=counters-db", "--database=counters-db --collection-group=windows --enable-ttl",
		"releases/cloud.firestore/counters-db"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "(default)") {
		t.Errorf("the plan still names the (default) database:\n%s", plan)
	}
	if out, err := dryRun(t, nil, "--project=demo-x", "--settings", settingsFile(t, "FIRESTORE_DATABASE=Bad_Name")); err == nil {
		t.Errorf("FIRESTORE_DATABASE=Bad_Name was accepted:\n%s", out)
	}
}

// TestDryRunCreatesTheDashboardAndAlerts: the plan creates or updates the
// dashboard and the four alert policies of monitoring/, their JSON in the
// plan, the lag threshold two cadences of the ROLLUP_CADENCE deployed.
func TestDryRunCreatesTheDashboardAndAlerts(t *testing.T) {
	telemetry := settingsFile(t, "ROLLUP_CADENCE=2s", "OTEL_EXPORTER_OTLP_ENDPOINT=https://telemetry.googleapis.com")
	plan, err := dryRun(t, []string{"ALERT_NOTIFICATION_CHANNELS=projects/demo-x/notificationChannels/1"}, "--project=demo-x", "--only", "counters", "--settings", telemetry)
	if err != nil {
		t.Fatalf("%v\n%s", err, plan)
	}
	if !strings.Contains(plan, `gcloud monitoring dashboards create --project=demo-x --config-from-file="$mon/dashboard.json"`) {
		t.Errorf("the plan creates no dashboard:\n%s", plan)
	}
	docs := regexp.MustCompile(`(?s)cat > "\$mon/([a-z-]+)\.json" <<'SHARDCOUNT_JSON'\n(.*?)\nSHARDCOUNT_JSON\n`).FindAllStringSubmatch(plan, -1)
	policies := map[string]string{}
	for _, d := range docs {
		var v struct {
			DisplayName string
			Conditions  []struct {
				ConditionPrometheusQueryLanguage struct{ Query string }
			}
		}
		if err := json.Unmarshal([]byte(d[2]), &v); err != nil || v.DisplayName == "" {
			t.Errorf("%s.json in the plan: %v", d[1], err)
		}
		if d[1] != "dashboard" {
			policies[v.DisplayName] = v.Conditions[0].ConditionPrometheusQueryLanguage.Query
			if !strings.Contains(plan, `--policy-from-file="$mon/`+d[1]+`.json" --notification-channels=projects/demo-x/notificationChannels/1`) ||
				!strings.Contains(plan, `--policy-from-file="$mon/`+d[1]+`.json" --set-notification-channels=projects/demo-x/notificationChannels/1`) {
				t.Errorf("%s is not created or updated with the notification channels", d[1])
			}
		}
	}
	if len(policies) != 4 {
		t.Errorf("%d alert policies, want 4 (lag, corrections, 5xx, refusals): %v", len(policies), policies)
	}
	if q := policies["shardcount: roll-up lag p99 above two cadences"]; !strings.HasSuffix(q, "> 4") {
		t.Errorf("the lag alert's query %q: want a threshold of 4 s (two cadences of 2s)", q)
	}
	if only, _ := dryRun(t, nil, "--project=demo-x", "--only", "getCounter", "--settings", telemetry); strings.Contains(only, "monitoring") {
		t.Error("--only getCounter also deploys the monitoring")
	}
	if off, _ := dryRun(t, nil, "--project=demo-x", "--only", "counters"); strings.Contains(off, "monitoring") {
		t.Error("with telemetry off, the plan deploys a dashboard of metrics nobody exports")
	}
	if i, j := strings.Index(plan, "indexes composite create"), strings.Index(plan, "monitoring dashboards"); i < 0 || j < i {
		t.Error("the monitoring comes before the indexes: a failure there would leave the functions without them")
	}
}

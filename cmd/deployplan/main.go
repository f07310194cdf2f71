// Command deployplan prints, as a bash script, every command that deploys the
// project to Google Cloud: one `gcloud functions deploy` per entry of
// service.Catalog, the Firestore rules and indexes, and the Cloud Scheduler
// job of reconcileCounters. scripts/deploy.sh runs it, or prints it with
// --dry-run. Generating the plan from the catalog and from config.Settings
// means a new function or setting cannot be left out.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/indexcheck"
	"github.com/shardcount/shardcount/internal/service"
)

func main() {
	var p plan
	flag.StringVar(&p.project, "project", "", "Google Cloud project (required)")
	flag.StringVar(&p.region, "region", "us-central1", "region of the functions")
	flag.StringVar(&p.only, "only", "", "deploy only this function")
	flag.StringVar(&p.triggerLocation, "trigger-location", "", "location of the Firestore database, when it differs from the region (e.g. nam5)")
	flag.StringVar(&p.firebaseCLI, "firebase", "", "Firebase CLI to deploy rules and indexes with; empty: use gcloud and the Rules API")
	flag.StringVar(&p.schedule, "reconcile-schedule", "*/15 * * * *", "cron schedule of reconcileCounters (Cloud Scheduler)")
	flag.BoolVar(&p.insecureOpen, "insecure-open", false, "allow AUTH=off: every public function open to anyone")
	flag.Parse()
	if err := p.write(os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "deployplan:", err)
		os.Exit(2)
	}
}

type plan struct {
	project, region, only, triggerLocation, firebaseCLI, schedule string
	insecureOpen                                                  bool
}

func (p *plan) write(w io.Writer, getenv func(string) string) error {
	if !regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`).MatchString(p.project) {
		return fmt.Errorf("--project %q is not a Google Cloud project id", p.project)
	}
	if p.only != "" && !slices.ContainsFunc(service.Catalog, func(s service.Spec) bool { return s.Name == p.only }) {
		return fmt.Errorf("--only %q is not a function; the functions are %s", p.only, names())
	}
	runtime, err := goRuntime("go.mod")
	if err != nil {
		return err
	}
	env, err := p.settings(getenv)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "# Deploy plan for project %s, region %s.\nset -euo pipefail\n\n", p.project, p.region)
	for _, spec := range service.Catalog {
		if p.only != "" && spec.Name != p.only {
			continue
		}
		fmt.Fprintln(w, shellJoin(p.deployFunction(spec, runtime, env)))
	}
	if p.only == "" || p.only == "reconcileCounters" {
		fmt.Fprintln(w)
		p.writeScheduler(w)
	}
	if p.only == "" {
		fmt.Fprintln(w)
		return p.writeFirestore(w)
	}
	return nil
}

// deployFunction is the gcloud command of one function.
func (p *plan) deployFunction(spec service.Spec, runtime string, env deployEnv) []string {
	args := []string{"gcloud", "functions", "deploy", spec.Name,
		"--gen2",
		"--project=" + p.project,
		"--region=" + p.region,
		"--runtime=" + runtime,
		"--source=.",
		"--entry-point=" + spec.Name,
		// A custom delimiter, as CORS_ORIGINS holds commas.
		"--set-env-vars=^;^" + strings.Join(env.vars, ";"),
		"--set-secrets=" + strings.Join(env.secrets, ","),
		// The handlers are safe for concurrent use: many requests share an
		// instance, the roll-up's events too (service.Server.eventHandler).
		"--concurrency=80", "--cpu=1",
	}
	switch spec.Kind {
	case service.HTTPTrigger:
		args = append(args, "--trigger-http")
		if spec.Access == service.Public {
			// Apps call it over HTTPS; it checks Firebase ID tokens itself.
			args = append(args, "--allow-unauthenticated")
		} else {
			args = append(args, "--no-allow-unauthenticated")
		}
		args = append(args, "--memory=512Mi")
		if spec.LongRunning {
			args = append(args, "--timeout=540s") // RECONCILE_BUDGET, at most 8m, then a save
		} else {
			// A few seconds over FIRESTORE_DEADLINE, so a call that would
			// hang answers 503 before the platform cuts it.
			args = append(args, fmt.Sprintf("--timeout=%ds", int(env.deadline.Seconds())+5))
		}
	case service.FirestoreTrigger:
		args = append(args,
			"--trigger-event-filters=type="+spec.EventType,
			"--trigger-event-filters=database=(default)",
			"--trigger-event-filters-path-pattern=document="+spec.Document,
			// Errors are returned only when a retry can help.
			"--retry",
			"--memory=256Mi",
			"--timeout=300s",
		)
		if p.triggerLocation != "" {
			args = append(args, "--trigger-location="+p.triggerLocation)
		}
	}
	return args
}

// writeScheduler schedules reconcileCounters, invoked with an OIDC token of
// a service account that may invoke it (IAM).
func (p *plan) writeScheduler(w io.Writer) {
	q := shellQuote
	fmt.Fprintf(w, "# reconcileCounters every %s, called by Cloud Scheduler with IAM.\n", p.schedule)
	fmt.Fprintf(w, "url=$(gcloud functions describe reconcileCounters --gen2 --project=%s --region=%s --format='value(serviceConfig.uri)')\n", q(p.project), q(p.region))
	fmt.Fprintf(w, "sa=${SCHEDULER_SERVICE_ACCOUNT:-$(gcloud projects describe %s --format='value(projectNumber)')-compute@developer.gserviceaccount.com}\n", q(p.project))
	fmt.Fprintf(w, "gcloud functions add-invoker-policy-binding reconcileCounters --project=%s --region=%s --member=\"serviceAccount:$sa\"\n", q(p.project), q(p.region))
	job := fmt.Sprintf("reconcile-counters --project=%s --location=%s --schedule=%s --uri=\"$url\" --http-method=POST --message-body='{}' --oidc-service-account-email=\"$sa\"",
		q(p.project), q(p.region), q(p.schedule))
	// update takes --update-headers, create takes --headers: a second
	// deploy updates the job the first one created.
	fmt.Fprintf(w, "gcloud scheduler jobs update http %s --update-headers=Content-Type=application/json || gcloud scheduler jobs create http %s --headers=Content-Type=application/json\n", job, job)
}

// writeFirestore deploys firestore.rules and firestore.indexes.json, with
// the Firebase CLI or, without it, with gcloud and the Firebase Rules API.
func (p *plan) writeFirestore(w io.Writer) error {
	q := shellQuote
	if p.firebaseCLI != "" {
		fmt.Fprintln(w, "# Firestore rules, composite indexes, single-field exemptions and TTL policies.")
		fmt.Fprintln(w, shellJoin([]string{p.firebaseCLI, "deploy", "--only", "firestore:rules,firestore:indexes", "--project", p.project, "--non-interactive"}))
		return nil
	}
	file, err := indexcheck.Load("firestore.indexes.json")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "# No Firebase CLI: composite indexes, exemptions and TTL with gcloud (an existing index fails harmlessly).")
	for _, ix := range file.Indexes {
		args := []string{"gcloud", "firestore", "indexes", "composite", "create", "--project=" + p.project,
			"--collection-group=" + ix.CollectionGroup, "--query-scope=" + strings.ToLower(ix.QueryScope), "--async"}
		for _, f := range ix.Fields {
			args = append(args, "--field-config=field-path="+f.FieldPath+",order="+strings.ToLower(f.Order))
		}
		fmt.Fprintln(w, shellJoin(args)+" || true")
	}
	for _, o := range file.FieldOverrides {
		if len(o.Indexes) == 0 {
			fmt.Fprintln(w, shellJoin([]string{"gcloud", "firestore", "indexes", "fields", "update", o.FieldPath,
				"--project=" + p.project, "--collection-group=" + o.CollectionGroup, "--disable-indexes", "--async"}))
		}
		if o.TTL {
			fmt.Fprintln(w, shellJoin([]string{"gcloud", "firestore", "fields", "ttls", "update", o.FieldPath,
				"--project=" + p.project, "--collection-group=" + o.CollectionGroup, "--enable-ttl", "--async"}))
		}
	}
	rules, err := os.ReadFile("firestore.rules")
	if err != nil {
		return err
	}
	content, _ := json.Marshal(string(rules)) // a string always marshals
	ruleset := fmt.Sprintf(`{"source":{"files":[{"name":"firestore.rules","content":%s}]}}`, content)
	api := "https://firebaserules.googleapis.com/v1/projects/" + p.project
	fmt.Fprintln(w, "# Rules through the Firebase Rules API: a new ruleset, then the cloud.firestore release points to it.")
	fmt.Fprintln(w, `token=$(gcloud auth print-access-token)`)
	fmt.Fprintf(w, "ruleset=$(curl -sf -X POST -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d %s | sed -n 's/.*\"name\": *\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n",
		q(api+"/rulesets"), q(ruleset))
	fmt.Fprintf(w, "curl -sf -X PATCH -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d \"{\\\"release\\\":{\\\"name\\\":\\\"projects/%s/releases/cloud.firestore\\\",\\\"rulesetName\\\":\\\"$ruleset\\\"}}\" >/dev/null\n",
		q(api+"/releases/cloud.firestore"), p.project)
	return nil
}

// deployEnv is what every function is deployed with.
type deployEnv struct {
	vars     []string      // KEY=value
	secrets  []string      // KEY=secret:version
	deadline time.Duration // FIRESTORE_DEADLINE
}

// settings reads the settings to deploy from getenv, as config.Settings
// declares them, and validates them as a deployed function will.
func (p *plan) settings(getenv func(string) string) (deployEnv, error) {
	vals := map[string]string{"GOOGLE_CLOUD_PROJECT": p.project, "K_SERVICE": "deploy-plan"}
	env := deployEnv{vars: []string{"GOOGLE_CLOUD_PROJECT=" + p.project}}
	for _, s := range config.Settings {
		v := getenv(s.Name)
		switch {
		case v == "":
		case s.Scope == config.Deployed:
			if strings.Contains(v, ";") {
				return env, fmt.Errorf("%s must not contain ';'", s.Name)
			}
			vals[s.Name] = v
			env.vars = append(env.vars, s.Name+"="+v)
		case s.Scope == config.Secret:
			ref, err := secretRef(p.project, v)
			if err != nil {
				return env, fmt.Errorf("%s: %w", s.Name, err)
			}
			vals[s.Name] = "a value from Secret Manager" // what config.FromEnv will see, in kind
			env.secrets = append(env.secrets, s.Name+"="+ref)
		}
	}
	if len(env.secrets) == 0 {
		return env, errors.New("PAGE_TOKEN_SECRET must name the Secret Manager secret holding the page-token key " +
			"(e.g. PAGE_TOKEN_SECRET=page-token; README \"Deploy\" says how to create it)")
	}
	if getenv("AUTH") == string(config.AuthOff) && !p.insecureOpen {
		return env, errors.New("AUTH=off would deploy every public function open to anyone: pass --insecure-open if that is what you want")
	}
	cfg, err := config.FromEnv(func(k string) string { return vals[k] })
	if err != nil {
		return env, err
	}
	env.deadline = cfg.FirestoreDeadline
	return env, nil
}

// secretRef turns a secret's name ("page-token", or
// "projects/P/secrets/page-token", optionally ":VERSION") into the form
// --set-secrets takes; the latest version by default.
func secretRef(project, name string) (string, error) {
	name, version, _ := strings.Cut(name, ":")
	if version == "" {
		version = "latest"
	}
	if m := regexp.MustCompile(`^projects/([a-z][a-z0-9-]+|[0-9]+)/secrets/([A-Za-z0-9_-]+)$`).FindStringSubmatch(name); m != nil {
		if m[1] != project {
			return name + ":" + version, nil // another project's secret, by its full name
		}
		name = m[2]
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`).MatchString(name) || !regexp.MustCompile(`^(latest|[0-9]+)$`).MatchString(version) {
		return "", fmt.Errorf("%q is not a Secret Manager secret name (e.g. page-token or projects/P/secrets/page-token), with an optional :VERSION", name)
	}
	return name + ":" + version, nil
}

// goRuntime maps go.mod's go line to the Cloud Functions runtime, so the
// runtime is never older than the language the module needs.
func goRuntime(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s has no go line", gomod)
	}
	return "go" + string(m[1]) + string(m[2]), nil
}

func names() string {
	var n []string
	for _, s := range service.Catalog {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

// shellQuote quotes s for bash unless it is made of safe characters only.
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_./=:,@%+-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/service"
	"github.com/shardcount/shardcount/internal/telemetry"
)

type plan struct {
	project, region, only, triggerLocation, firestoreFrom string
	insecureOpen, replaceRules                            bool
	// source is shardcount's checkout, absolute: the plan's commands work
	// from any directory.
	source string
	// settings are what every function is deployed with: the app's
	// settings file, or none (every setting at its default).
	settings config.File
	database string // the settings' FIRESTORE_DATABASE
}

// write prints the plan; getenv is the deploying shell's, which may name
// secrets and may not set a setting the settings file decides.
func (p *plan) write(w io.Writer, getenv func(string) string) error {
	if !regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`).MatchString(p.project) {
		return fmt.Errorf("--project %q is not a Google Cloud project id", p.project)
	}
	if p.firestoreFrom != "" && p.replaceRules {
		return errors.New("--firestore-from and --replace-rules are exclusive: deploy your app's merged rules, or this repository's alone")
	}
	specs, err := p.chosen()
	if err != nil {
		return err
	}
	runtime, err := goRuntime("go.mod")
	if err != nil {
		return err
	}
	env, err := p.deployEnv(getenv, specs)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "# Deploy plan for project %s, region %s, with %s: %s.\nset -euo pipefail\n\n", p.project, p.region, p.settingsNote(), strings.Join(names(specs), ", "))
	p.writeKindsCheck(w, specs, env.cfg)
	for _, spec := range specs {
		fmt.Fprintln(w, shellJoin(p.deployFunction(spec, runtime, env)))
	}
	counters := slices.ContainsFunc(specs, func(s service.Spec) bool { return s.Name == "reconcileCounters" })
	if counters {
		fmt.Fprintln(w)
		p.writeScheduler(w, env.cfg)
	}
	fmt.Fprintln(w)
	if err := p.writeFirestore(w, specs); err != nil {
		return err
	}
	// The dashboard and alerts read the functions' metrics: with
	// telemetry on, after everything the functions need.
	if counters && telemetry.Enabled(p.settings.Value) {
		fmt.Fprintln(w)
		return p.writeMonitoring(w, env.cfg, getenv("ALERT_NOTIFICATION_CHANNELS"))
	}
	return nil
}

// chosen returns the functions -only names (groups or functions), in
// catalog order; all of them without it.
func (p *plan) chosen() ([]service.Spec, error) {
	if p.only == "" {
		return service.Catalog, nil
	}
	want := map[string]bool{}
	for name := range strings.SplitSeq(p.only, ",") {
		name = strings.TrimSpace(name)
		known := slices.Contains(service.Groups, service.Group(name)) ||
			slices.ContainsFunc(service.Catalog, func(s service.Spec) bool { return s.Name == name })
		if !known {
			return nil, fmt.Errorf("--only %q is neither a group (%s) nor a function (%s)", name, strings.Join(service.GroupNames(service.Groups), ", "), strings.Join(names(service.Catalog), ", "))
		}
		want[name] = true
	}
	var out []service.Spec
	for _, s := range service.Catalog {
		if want[s.Name] || want[string(s.Group)] {
			out = append(out, s)
		}
	}
	return out, nil
}

// deployFunction is the gcloud command of one function.
func (p *plan) deployFunction(spec service.Spec, runtime string, env deployEnv) []string {
	args := []string{"gcloud", "functions", "deploy", spec.Name,
		"--gen2",
		"--project=" + p.project,
		"--region=" + p.region,
		"--runtime=" + runtime,
		"--source=" + p.source,
		"--entry-point=" + spec.Name,
		// A custom delimiter, as CORS_ORIGINS holds commas.
		"--set-env-vars=^;^" + strings.Join(env.vars, ";"),
	}
	if len(env.secrets) > 0 {
		args = append(args, "--set-secrets="+strings.Join(env.secrets, ","))
	}
	// The handlers are safe for concurrent use: many requests share an
	// instance, the roll-up's events too (service.Server.eventHandler).
	args = append(args, "--concurrency=80", "--cpu=1")
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
			args = append(args, timeout(env.cfg.ReconcileTimeout()))
		} else {
			// A few seconds over FIRESTORE_DEADLINE, so a call that would
			// hang answers 503 before the platform cuts it.
			args = append(args, timeout(env.cfg.FirestoreDeadline+5*time.Second))
		}
	case service.FirestoreTrigger:
		args = append(args,
			"--trigger-event-filters=type="+spec.EventType,
			"--trigger-event-filters=database="+p.database,
			"--trigger-event-filters-path-pattern=document="+spec.Document,
			// Errors are returned only when a retry can help.
			"--retry",
			"--memory=256Mi",
			timeout(env.cfg.RollupTimeout()),
		)
		if p.triggerLocation != "" {
			args = append(args, "--trigger-location="+p.triggerLocation)
		}
	}
	return args
}

func timeout(d time.Duration) string { return fmt.Sprintf("--timeout=%ds", int(d.Seconds())) }

// reconcileEvery is how often Cloud Scheduler calls reconcileCounters. It
// is not a setting: a counter whose roll-up event was lost rolls up at the
// next run, or the one after when a run stops at its budget, and a
// distinct counter's estimates reach back only windows.MaxReach
// (TestReconcileRunsWithinTheEstimatesReach holds the two together).
const reconcileEvery = 15 * time.Minute

// writeScheduler schedules reconcileCounters, invoked with an OIDC token of
// a service account that may invoke it (IAM), with an attempt deadline
// that covers a whole run (Cloud Scheduler's default, 3 minutes, would cut
// a 4-minute budget short).
func (p *plan) writeScheduler(w io.Writer, cfg config.Config) {
	q := shellQuote
	schedule := fmt.Sprintf("*/%d * * * *", int(reconcileEvery.Minutes()))
	fmt.Fprintf(w, "# reconcileCounters every %d minutes, called by Cloud Scheduler with IAM.\n", int(reconcileEvery.Minutes()))
	fmt.Fprintf(w, "url=$(gcloud functions describe reconcileCounters --gen2 --project=%s --region=%s --format='value(serviceConfig.uri)')\n", q(p.project), q(p.region))
	fmt.Fprintf(w, "sa=${SCHEDULER_SERVICE_ACCOUNT:-$(gcloud projects describe %s --format='value(projectNumber)')-compute@developer.gserviceaccount.com}\n", q(p.project))
	fmt.Fprintf(w, "gcloud functions add-invoker-policy-binding reconcileCounters --project=%s --region=%s --member=\"serviceAccount:$sa\"\n", q(p.project), q(p.region))
	where := fmt.Sprintf("--project=%s --location=%s", q(p.project), q(p.region))
	job := fmt.Sprintf("reconcile-counters %s --schedule=%s --uri=\"$url\" --http-method=POST --message-body='{}' --oidc-service-account-email=\"$sa\" --attempt-deadline=%ds",
		where, q(schedule), int(cfg.ReconcileTimeout().Seconds()))
	// update takes --update-headers, create takes --headers: a second
	// deploy updates the job the first one created, which the first
	// deploy does not try (its NOT_FOUND would print an ERROR).
	fmt.Fprintf(w, "if gcloud scheduler jobs describe reconcile-counters %s >/dev/null 2>&1; then\n", where)
	fmt.Fprintf(w, "  gcloud scheduler jobs update http %s --update-headers=Content-Type=application/json\nelse\n", job)
	fmt.Fprintf(w, "  gcloud scheduler jobs create http %s --headers=Content-Type=application/json\nfi\n", job)
}

// deployEnv is what every function is deployed with.
type deployEnv struct {
	vars    []string // KEY=value
	secrets []string // KEY=secret:version
	cfg     config.Config
}

// settingsNote says where the settings come from, in the plan's first
// line.
func (p *plan) settingsNote() string {
	if p.settings.Path == "" {
		return "no " + config.FileName + ": every setting at its default"
	}
	return fmt.Sprintf("the settings of %s (%d set, the others at their defaults)", p.settings.Path, len(p.settings.Values))
}

// deployEnv is what to deploy: the settings file's, as
// config.Settings declares them, validated as a deployed function will;
// secrets are named in the shell (getenv), and nothing else may be set
// there to another value than the file's. The page-token secret is
// required when a chosen function signs page tokens.
func (p *plan) deployEnv(getenv func(string) string, specs []service.Spec) (deployEnv, error) {
	vals := map[string]string{"GOOGLE_CLOUD_PROJECT": p.project, "K_SERVICE": "deploy-plan"}
	env := deployEnv{vars: []string{"GOOGLE_CLOUD_PROJECT=" + p.project}}
	if conflicts := p.settings.Conflicts(getenv, true); len(conflicts) > 0 {
		return env, errors.Join(conflicts...)
	}
	for _, s := range config.Settings {
		v := getenv(s.Name)
		switch {
		case s.Scope == config.Deployed:
			v = p.settings.Values[s.Name]
			if v == "" {
				continue
			}
			if strings.Contains(v, ";") {
				return env, fmt.Errorf("%s must not contain ';'", s.Name)
			}
			vals[s.Name] = v
			env.vars = append(env.vars, s.Name+"="+v)
		case v == "":
		case s.Scope == config.Secret:
			ref, err := secretRef(p.project, v)
			if err != nil {
				return env, fmt.Errorf("%s: %w", s.Name, err)
			}
			vals[s.Name] = "a value from Secret Manager" // what config.FromEnv will see, in kind
			env.secrets = append(env.secrets, s.Name+"="+ref)
		}
	}
	if signers := service.SignsPageTokens(specs); len(signers) > 0 && getenv("PAGE_TOKEN_SECRET") == "" {
		return env, fmt.Errorf("PAGE_TOKEN_SECRET must name the Secret Manager secret holding the page-token key, which %s signs its page tokens with "+
			"(e.g. PAGE_TOKEN_SECRET=page-token; README \"Deploy\" says how to create it), or leave it out with --only counters", strings.Join(signers, ", "))
	}
	cfg, err := config.FromEnv(func(k string) string { return vals[k] })
	if err != nil {
		return env, err
	}
	if cfg.Auth == config.AuthOff && !p.insecureOpen {
		return env, errors.New("AUTH=off would deploy every public function open to anyone: pass --insecure-open if that is what you want")
	}
	env.cfg = cfg
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

func names(specs []service.Spec) []string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return n
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

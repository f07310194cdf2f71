package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/service"
)

// No deploy drops a kind: counters of a kind the functions no longer know
// answer 404, and a kind that counts otherwise (unique or not) reads its
// existing counters wrong. Nor does one move the counters to another
// database (FIRESTORE_DATABASE: every counter would look gone) or lower
// INSTRUMENT_SHARDS (instruments on the values above would never be
// read). So a real deploy first reads the settings of the functions as
// deployed, with one `gcloud functions list`, and compares them with the
// file's.

// lister returns the environment of each function deployed in the
// project's region, by name.
type lister func(project, region string) (map[string]map[string]string, error)

// kindsChecked are the functions whose deployed settings are compared:
// every one chosen.
func kindsChecked(specs []service.Spec) []string { return names(specs) }

// writeKindsCheck says, in the plan, what a real run compares before it
// deploys anything (the dry run reads nothing deployed; a pasted plan
// skips it).
func (p *plan) writeKindsCheck(w io.Writer, specs []service.Spec, cfg config.Config) {
	var kinds []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Kinds)) {
		kinds = append(kinds, name+": "+cfg.Kinds[name].Counting())
	}
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	fmt.Fprintln(w, "# Before this plan, scripts/deploy.sh reads the settings of the functions as deployed (gcloud functions list")
	fmt.Fprintln(w, "# --format=json, serviceConfig.environmentVariables) and deploys nothing if one counts a kind COUNTER_KINDS here lacks,")
	fmt.Fprintln(w, "# or counts it otherwise, or keeps its counters in another FIRESTORE_DATABASE, or has a higher INSTRUMENT_SHARDS")
	fmt.Fprintf(w, "# (--allow-kind-changes goes ahead); this plan pasted on its own does not. Here: kinds %s; database %s.\n\n",
		strings.Join(kinds, "; "), p.database)
}

// checkDeployed compares the settings of the chosen functions as
// deployed with the settings file's: a kind dropped or counted otherwise,
// another database, fewer instrument shards are errors naming them,
// unless allow (then reported, and the deploy goes on).
func (p *plan) checkDeployed(w io.Writer, list lister, allow bool) error {
	specs, err := p.chosen()
	if err != nil {
		return err
	}
	want, err := counter.ParseKinds(p.settings.Value("COUNTER_KINDS"))
	if err != nil {
		return err // ReadFile validated it
	}
	deployed, err := list(p.project, p.region)
	if err != nil {
		return fmt.Errorf("cannot read the settings of the functions as deployed, to check that no kind of counters is dropped: %w", err)
	}
	var problems []string
	seen := map[string][]string{} // the functions of each problem, which are all alike
	problem := func(name, format string, args ...any) {
		text := fmt.Sprintf(format, args...)
		if seen[text] == nil {
			problems = append(problems, text)
		}
		seen[text] = append(seen[text], name)
	}
	for _, name := range kindsChecked(specs) {
		env, ok := deployed[name]
		if !ok {
			fmt.Fprintf(w, "%s: not deployed yet\n", name)
			continue
		}
		have, err := counter.ParseKinds(env["COUNTER_KINDS"])
		if err != nil {
			problem(name, "deployed with a COUNTER_KINDS this version cannot read (%v)", err)
			continue
		}
		for _, kind := range slices.Sorted(maps.Keys(have)) {
			next, kept := want[kind]
			switch {
			case !kept:
				problem(name, "counts the kind %q (%s), which %s drops: its counters would answer 404", kind, have[kind].Counting(), p.settingsWhere())
			case next.Counting() != have[kind].Counting():
				problem(name, "counts the kind %q %s; %s makes it %s: its counters would be read otherwise", kind, have[kind].Counting(), p.settingsWhere(), next.Counting())
			}
		}
		if db := cmp.Or(env["FIRESTORE_DATABASE"], "(default)"); db != p.database {
			problem(name, "keeps its counters in the database %s; %s moves it to %s, where none of them is", db, p.settingsWhere(), p.database)
		}
		if was, now := shards(env["INSTRUMENT_SHARDS"]), shards(p.settings.Value("INSTRUMENT_SHARDS")); now < was {
			problem(name, "spreads instruments over %d shard values; %s lowers it to %d, and the instruments on the others would never be read", was, p.settingsWhere(), now)
		}
		fmt.Fprintf(w, "%s: deployed settings checked\n", name)
	}
	for i, text := range problems {
		problems[i] = strings.Join(seen[text], ", ") + ": " + text
	}
	if len(problems) == 0 {
		return nil
	}
	if allow {
		for _, pr := range problems {
			fmt.Fprintln(w, "warning (--allow-kind-changes): "+pr)
		}
		return nil
	}
	return fmt.Errorf("nothing was deployed:\n  %s\nAdd the kind back to COUNTER_KINDS (or the setting back as it was), or, to drop or change it on purpose, deploy with --allow-kind-changes", strings.Join(problems, "\n  "))
}

// shards is INSTRUMENT_SHARDS' value, its default when unset.
func shards(v string) int {
	n, err := strconv.Atoi(cmp.Or(v, "3"))
	if err != nil {
		return 0
	}
	return n
}

func (p *plan) settingsWhere() string {
	if p.settings.Path == "" {
		return "this deploy (no " + config.FileName + ")"
	}
	return p.settings.Path
}

// gcloudList reads the functions deployed in a project's region, and
// their environments, with one gcloud call (gcloud does not take
// concurrent runs well: they share its credentials' store).
func gcloudList(project, region string) (map[string]map[string]string, error) {
	cmd := exec.Command("gcloud", "functions", "list", "--project="+project, "--regions="+region, "--format=json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gcloud functions list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var fns []struct {
		Name          string `json:"name"`
		ServiceConfig struct {
			EnvironmentVariables map[string]string `json:"environmentVariables"`
		} `json:"serviceConfig"`
	}
	if err := json.Unmarshal(out, &fns); err != nil {
		return nil, errors.New("gcloud functions list: not a JSON list of functions: " + err.Error())
	}
	deployed := map[string]map[string]string{}
	for _, f := range fns {
		env := f.ServiceConfig.EnvironmentVariables
		if env == nil {
			env = map[string]string{}
		}
		deployed[f.Name[strings.LastIndex(f.Name, "/")+1:]] = env
	}
	return deployed, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/service"
)

// No deploy drops a kind: counters of a kind the functions no longer know
// answer 404, and a kind that counts otherwise (unique or not) reads its
// existing counters wrong. So a real deploy first reads the settings of
// the functions as deployed and compares their kinds with the file's.

// describer returns a deployed function's environment, and false when the
// function is not deployed.
type describer func(name, project, region string) (map[string]string, bool, error)

// kindsChecked are the functions whose deployed kinds are compared: those
// that count.
func kindsChecked(specs []service.Spec) []string {
	var out []string
	for _, s := range specs {
		if s.Group == service.Counters {
			out = append(out, s.Name)
		}
	}
	return out
}

// writeKindsCheck says, in the plan, what a real run compares before it
// deploys anything (the dry run reads nothing deployed).
func (p *plan) writeKindsCheck(w io.Writer, specs []service.Spec, cfg config.Config) {
	checked := kindsChecked(specs)
	if len(checked) == 0 {
		return
	}
	var kinds []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Kinds)) {
		kinds = append(kinds, name+": "+cfg.Kinds[name].Counting())
	}
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	fmt.Fprintf(w, "# Before this plan, a real run reads the settings of %s as deployed (gcloud functions describe NAME --gen2 --format=json,\n", strings.Join(checked, ", "))
	fmt.Fprintln(w, "# serviceConfig.environmentVariables) and deploys nothing if one counts a kind that COUNTER_KINDS here lacks, or counts")
	fmt.Fprintf(w, "# it otherwise (--allow-kind-changes goes ahead). The kinds deployed here: %s.\n\n", strings.Join(kinds, "; "))
}

// checkDeployed compares the kinds of the chosen functions as deployed
// with the settings file's: a kind dropped or counted otherwise is an
// error naming it, unless allow (then reported, and the deploy goes on).
func (p *plan) checkDeployed(w io.Writer, describe describer, allow bool) error {
	specs, err := p.chosen()
	if err != nil {
		return err
	}
	want, err := counter.ParseKinds(p.settings.Value("COUNTER_KINDS"))
	if err != nil {
		return err // ReadFile validated it
	}
	checked := kindsChecked(specs)
	type deployed struct {
		env map[string]string
		ok  bool
		err error
	}
	got := make([]deployed, len(checked))
	var wg sync.WaitGroup
	for i, name := range checked {
		wg.Go(func() {
			got[i].env, got[i].ok, got[i].err = describe(name, p.project, p.region)
		})
	}
	wg.Wait()
	var problems []string
	for i, name := range checked {
		d := got[i]
		switch {
		case d.err != nil:
			return fmt.Errorf("cannot read the settings of %s as deployed, to check that no kind of counters is dropped: %w", name, d.err)
		case !d.ok:
			fmt.Fprintf(w, "%s: not deployed yet\n", name)
			continue
		}
		have, err := counter.ParseKinds(d.env["COUNTER_KINDS"])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s is deployed with a COUNTER_KINDS this version cannot read (%v)", name, err))
			continue
		}
		for _, kind := range slices.Sorted(maps.Keys(have)) {
			next, kept := want[kind]
			switch {
			case !kept:
				problems = append(problems, fmt.Sprintf("%s counts the kind %q (%s), which %s drops: its counters would answer 404", name, kind, have[kind].Counting(), p.settingsWhere()))
			case next.Counting() != have[kind].Counting():
				problems = append(problems, fmt.Sprintf("%s counts the kind %q %s; %s makes it %s: its counters would be read otherwise", name, kind, have[kind].Counting(), p.settingsWhere(), next.Counting()))
			}
		}
		fmt.Fprintf(w, "%s: deployed kinds checked\n", name)
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
	return fmt.Errorf("nothing was deployed:\n  %s\nAdd the kind back to COUNTER_KINDS, or, to drop or change it on purpose, deploy with --allow-kind-changes", strings.Join(problems, "\n  "))
}

func (p *plan) settingsWhere() string {
	if p.settings.Path == "" {
		return "this deploy (no " + config.FileName + ")"
	}
	return p.settings.Path
}

// gcloudDescribe reads a deployed function's environment with gcloud.
func gcloudDescribe(name, project, region string) (map[string]string, bool, error) {
	cmd := exec.Command("gcloud", "functions", "describe", name, "--gen2", "--project="+project, "--region="+region, "--format=json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := stderr.String(); strings.Contains(msg, "NOT_FOUND") || strings.Contains(msg, "not found") || strings.Contains(msg, "does not exist") {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("gcloud functions describe %s: %v: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	var d struct {
		ServiceConfig struct {
			EnvironmentVariables map[string]string `json:"environmentVariables"`
		} `json:"serviceConfig"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		return nil, false, errors.New("gcloud functions describe " + name + ": not the JSON of a function: " + err.Error())
	}
	return d.ServiceConfig.EnvironmentVariables, true, nil
}

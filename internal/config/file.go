package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// FileName is an app's settings file, beside its firebase.json: the
// settings its functions are deployed with, in the format `gcloud
// functions deploy --env-vars-file` takes (`KEY: 'value'`, one per line).
// scripts/deploy.sh and scripts/dev.sh read it, so what deploys never
// depends on the shell it is deployed from.
const FileName = "shardcount.env.yaml"

// File is a settings file as read: the settings it sets, by name.
type File struct {
	// Path is where it was read; "" for no file (every setting at its
	// default).
	Path   string
	Values map[string]string
}

// ReadFile reads and checks a settings file: a YAML mapping of settings
// of the table to quoted strings, deployed settings only (a secret is
// refused, with where it belongs instead), each value as a deployed
// function validates it at start-up. The error names every problem's key.
func ReadFile(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	f := File{Path: path, Values: map[string]string{}}
	var doc, more yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := dec.Decode(&more); err != io.EOF {
		return File{}, fmt.Errorf("%s: holds more than one YAML document (a --- line): gcloud reads one", path)
	}
	if len(doc.Content) == 0 {
		return f, nil // empty, or comments only: every setting at its default
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return File{}, fmt.Errorf("%s: must be a mapping of settings, one `KEY: 'value'` per line", path)
	}
	var problems []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch s, ok := setting(k.Value); {
		case !ok:
			problems = append(problems, fmt.Errorf("%s (line %d): not a setting of shardcount's (docs/reference/settings.md lists them)", k.Value, k.Line))
		case s.Scope == Secret:
			problems = append(problems, fmt.Errorf("%s (line %d): a secret does not belong in a file kept in the app's repository: keep it in Secret Manager and name the secret in the deploying shell (%s=NAME scripts/deploy.sh …; docs/operations/deploy.md)", k.Value, k.Line, k.Value))
		case s.Scope != Deployed:
			problems = append(problems, fmt.Errorf("%s (line %d): not a setting the functions are deployed with (it is set by the platform or for the emulators)", k.Value, k.Line))
		case v.Kind == yaml.AliasNode:
			problems = append(problems, fmt.Errorf("%s (line %d): write the value itself, quoted, not an alias", k.Value, k.Line))
		case v.Kind != yaml.ScalarNode || v.Tag != "!!str":
			problems = append(problems, fmt.Errorf("%s (line %d): the value must be a quoted string, such as %s: '%s' (gcloud takes strings only)", k.Value, k.Line, k.Value, strings.ReplaceAll(v.Value, "'", "''")))
		case strings.Contains(v.Value, ";"):
			problems = append(problems, fmt.Errorf("%s (line %d): a value may not hold ';' (the deploy passes the settings with it as their separator)", k.Value, k.Line))
		case seen[k.Value]:
			problems = append(problems, fmt.Errorf("%s (line %d): set twice", k.Value, k.Line))
		case v.Value != "":
			f.Values[k.Value] = v.Value
		}
		seen[k.Value] = true
	}
	// Validated as a deployed function validates its environment.
	if _, err := FromEnv(f.deployed()); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return File{}, fmt.Errorf("%s: %w", path, errors.Join(problems...))
	}
	return f, nil
}

// deployed is the environment a deployed function gets from the file.
func (f File) deployed() func(string) string {
	return func(k string) string {
		if k == "K_SERVICE" {
			return "settings-file"
		}
		return f.Values[k]
	}
}

func setting(name string) (Setting, bool) {
	i := slices.IndexFunc(Settings, func(s Setting) bool { return s.Name == name })
	if i < 0 {
		return Setting{}, false
	}
	return Settings[i], true
}

// Value is the file's value of a setting: the one it sets, or the
// setting's default.
func (f File) Value(name string) string {
	if v, ok := f.Values[name]; ok {
		return v
	}
	s, _ := setting(name)
	return s.Default
}

// Conflicts lists, for each deployed setting that getenv (the shell)
// sets to another value than the file's, why the shell cannot have it:
// what deploys comes from the file. With strict (a deploy), a setting the
// file leaves out cannot be set in the shell either (but to its
// default); without (dev.sh), the shell may add it: Added names them.
func (f File) Conflicts(getenv func(string) string, strict bool) []error {
	where := f.Path
	if where == "" {
		where = "no " + FileName + " (every setting at its default)"
	}
	var out []error
	for _, s := range Settings {
		v := getenv(s.Name)
		_, set := f.Values[s.Name]
		if s.Scope != Deployed || v == "" || v == f.Value(s.Name) || !set && !strict {
			continue
		}
		switch {
		case f.Path == "":
			out = append(out, fmt.Errorf("%s is set in this shell (%s), and settings come from %s, beside your app's firebase.json: put it there (scripts/firebase-merge.sh creates the file), or unset it", s.Name, quoteValue(v), FileName))
		case set:
			out = append(out, fmt.Errorf("%s is set in this shell (%s), and %s sets %s: the file decides; change the file, or unset %s", s.Name, quoteValue(v), where, quoteValue(f.Values[s.Name]), s.Name))
		default:
			out = append(out, fmt.Errorf("%s is set in this shell (%s), which %s does not set (its default is %s): put it in the file, or unset %s", s.Name, quoteValue(v), where, quoteValue(s.Default), s.Name))
		}
	}
	return out
}

// Added names the deployed settings getenv (the shell) sets and the file
// does not: what dev.sh runs with besides the file's.
func (f File) Added(getenv func(string) string) []string {
	var out []string
	for _, s := range Settings {
		if _, set := f.Values[s.Name]; s.Scope == Deployed && !set && getenv(s.Name) != "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// quoteValue shows a value as the file would hold it.
func quoteValue(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// Template is a new settings file: every deployed setting at its default,
// commented out, but for an example kind.
func Template() string {
	var b strings.Builder
	b.WriteString(`# shardcount's settings for this app: what scripts/deploy.sh deploys the
# functions with and scripts/dev.sh runs them with (--firestore-from this
# directory). The format of gcloud functions deploy --env-vars-file: one
# KEY: 'value' per line, quoted. A setting left out keeps its default (shown
# commented out). Secrets (PAGE_TOKEN_SECRET, OTEL_EXPORTER_OTLP_HEADERS)
# stay in Secret Manager, named in the deploying shell. One file per
# environment: shardcount.staging.env.yaml, passed with --settings.
# docs/reference/settings.md says what each one does.

# Your kinds of counters: likes:POST_ID counts each user once, views:POST_ID
# counts every view; a counter of a kind comes into being with its first use.
COUNTER_KINDS: '{"likes": {"unique": true}, "views": {}}'

`)
	for _, s := range Settings {
		if s.Scope != Deployed || s.Name == "COUNTER_KINDS" {
			continue
		}
		fmt.Fprintf(&b, "# %s: %s    # %s\n", s.Name, quoteValue(s.Default), firstSentence(s.Doc))
	}
	return b.String()
}

// firstSentence is a setting's documentation up to its first full stop.
func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardcount/shardcount/internal/firebasemerge"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/indexcheck"
	"github.com/shardcount/shardcount/internal/service"
)

// writeFirestore plans the Firestore side. By default it adds the indexes
// and TTL policies the chosen functions need, with gcloud, which never
// removes any, and leaves the rules alone: an app's own rules would be
// replaced by a file that knows only shardcount's collections. The rules
// go out with -firestore-from (an app's files, which must hold
// shardcount's current block and indexes) or -replace-rules (this
// repository's own files, for a project with no rules of its own).
func (p *plan) writeFirestore(w io.Writer, specs []service.Spec) error {
	switch {
	case p.firestoreFrom != "":
		dir, err := filepath.Abs(p.firestoreFrom)
		if err != nil {
			return err
		}
		if err := checkMerged(dir); err != nil {
			return err
		}
		return p.deployFiles(w, dir, "the app's rules and indexes, which hold shardcount's")
	case p.replaceRules:
		return p.deployFiles(w, ".", "this repository's rules and indexes, replacing the project's rules (--replace-rules)")
	}
	file, err := indexcheck.Load("firestore.indexes.json")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "# Indexes and TTL policies the chosen functions need, added with gcloud (an existing one fails harmlessly; none is removed).")
	writeIndexCommands(w, p.project, neededBy(file, specs))
	note := "Firestore rules are not deployed: they would replace your app's own. Merge shardcount's into your app's files " +
		"(scripts/firebase-merge.sh PATH_TO_APP) and deploy them from there, or pass --firestore-from PATH_TO_APP; " +
		"a project with no rules of its own may take this repository's with --replace-rules."
	fmt.Fprintln(w, "\n# "+note)
	fmt.Fprintln(os.Stderr, "deploy: note: "+note)
	return nil
}

// checkMerged refuses an app directory whose rules lack shardcount's
// current block, or whose indexes lack one of shardcount's.
func checkMerged(dir string) error {
	ours, err := os.ReadFile("firestore.rules")
	if err != nil {
		return err
	}
	block, err := firebasemerge.Block(string(ours))
	if err != nil {
		return err
	}
	merge := "run scripts/firebase-merge.sh " + dir + " first"
	rules, err := os.ReadFile(filepath.Join(dir, "firestore.rules"))
	if err != nil {
		return fmt.Errorf("--firestore-from: %w", err)
	}
	if !firebasemerge.HasBlock(string(rules), block) {
		return fmt.Errorf("--firestore-from: %s/firestore.rules lacks shardcount's current rules block: %s", dir, merge)
	}
	ourIndexes, err := os.ReadFile("firestore.indexes.json")
	if err != nil {
		return err
	}
	appIndexes, err := os.ReadFile(filepath.Join(dir, "firestore.indexes.json"))
	if err != nil {
		return fmt.Errorf("--firestore-from: %w", err)
	}
	merged, err := firebasemerge.Indexes(appIndexes, ourIndexes)
	if err != nil {
		return fmt.Errorf("--firestore-from: %w", err)
	}
	if !sameJSON(merged, appIndexes) {
		return fmt.Errorf("--firestore-from: %s/firestore.indexes.json lacks shardcount's indexes or TTL policies: %s", dir, merge)
	}
	return nil
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// deployFiles deploys the rules and indexes of dir: with the Firebase CLI
// (from dir, which holds their firebase.json), or with gcloud and the
// Firebase Rules API.
func (p *plan) deployFiles(w io.Writer, dir, what string) error {
	fmt.Fprintf(w, "# Firestore: %s.\n", what)
	if p.firebaseCLI != "" {
		cli := p.firebaseCLI
		if strings.Contains(cli, "/") {
			if abs, err := filepath.Abs(cli); err == nil {
				cli = abs
			}
		}
		fmt.Fprintf(w, "(cd %s && %s)\n", shellQuote(dir), shellJoin([]string{cli, "deploy", "--only", "firestore:rules,firestore:indexes", "--project", p.project, "--non-interactive"}))
		return nil
	}
	file, err := indexcheck.Load(filepath.Join(dir, "firestore.indexes.json"))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "# No Firebase CLI: composite indexes, exemptions and TTL with gcloud (an existing index fails harmlessly).")
	writeIndexCommands(w, p.project, file)
	rules, err := os.ReadFile(filepath.Join(dir, "firestore.rules"))
	if err != nil {
		return err
	}
	content, _ := json.Marshal(string(rules)) // a string always marshals
	ruleset := fmt.Sprintf(`{"source":{"files":[{"name":"firestore.rules","content":%s}]}}`, content)
	api := "https://firebaserules.googleapis.com/v1/projects/" + p.project
	q := shellQuote
	fmt.Fprintln(w, "# Rules through the Firebase Rules API: a new ruleset, then the cloud.firestore release points to it.")
	fmt.Fprintln(w, `token=$(gcloud auth print-access-token)`)
	fmt.Fprintf(w, "ruleset=$(curl -sf -X POST -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d %s | sed -n 's/.*\"name\": *\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n",
		q(api+"/rulesets"), q(ruleset))
	fmt.Fprintf(w, "curl -sf -X PATCH -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d \"{\\\"release\\\":{\\\"name\\\":\\\"projects/%s/releases/cloud.firestore\\\",\\\"rulesetName\\\":\\\"$ruleset\\\"}}\" >/dev/null\n",
		q(api+"/releases/cloud.firestore"), p.project)
	return nil
}

// writeIndexCommands writes the gcloud commands of an index file's
// composite indexes, exemptions and TTL policies.
func writeIndexCommands(w io.Writer, project string, file *indexcheck.File) {
	for _, ix := range file.Indexes {
		args := []string{"gcloud", "firestore", "indexes", "composite", "create", "--project=" + project,
			"--collection-group=" + ix.CollectionGroup, "--query-scope=" + strings.ToLower(strings.ReplaceAll(ix.QueryScope, "_", "-")), "--async"}
		for _, f := range ix.Fields {
			args = append(args, "--field-config=field-path="+f.FieldPath+",order="+strings.ToLower(f.Order))
		}
		fmt.Fprintln(w, shellJoin(args)+" || true")
	}
	for _, o := range file.FieldOverrides {
		if len(o.Indexes) == 0 {
			fmt.Fprintln(w, shellJoin([]string{"gcloud", "firestore", "indexes", "fields", "update", o.FieldPath,
				"--project=" + project, "--collection-group=" + o.CollectionGroup, "--disable-indexes", "--async"}))
		}
		if o.TTL {
			fmt.Fprintln(w, shellJoin([]string{"gcloud", "firestore", "fields", "ttls", "update", o.FieldPath,
				"--project=" + project, "--collection-group=" + o.CollectionGroup, "--enable-ttl", "--async"}))
		}
	}
}

// neededBy keeps the entries of an index file that the chosen functions
// need: those on instruments for the instruments group, the others for
// the counters group.
func neededBy(file *indexcheck.File, specs []service.Spec) *indexcheck.File {
	groups := map[service.Group]bool{}
	for _, s := range specs {
		groups[s.Group] = true
	}
	groupOf := func(collection string) service.Group {
		if collection == firestoredb.InstrumentsCollection {
			return service.Instruments
		}
		return service.Counters
	}
	out := &indexcheck.File{}
	for _, ix := range file.Indexes {
		if groups[groupOf(ix.CollectionGroup)] {
			out.Indexes = append(out.Indexes, ix)
		}
	}
	for _, o := range file.FieldOverrides {
		if groups[groupOf(o.CollectionGroup)] {
			out.FieldOverrides = append(out.FieldOverrides, o)
		}
	}
	return out
}

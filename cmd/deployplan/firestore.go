package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/shardcount/shardcount/internal/firebasemerge"
	"github.com/shardcount/shardcount/internal/indexcheck"
	"github.com/shardcount/shardcount/internal/service"
)

// writeFirestore plans the Firestore side, with gcloud and the Firebase
// Rules API only, so the plan is the same whatever is installed. By default
// it adds the indexes and TTL policies the chosen functions need, which
// never removes any, and leaves the rules alone: an app's own rules would be
// replaced by a file that knows only shardcount's collections. The rules go
// out with -firestore-from (the app's files, as its firebase.json names
// them, which must hold shardcount's current block and indexes for the
// chosen groups) or -replace-rules (this repository's own rules, for a
// project with no rules of its own).
func (p *plan) writeFirestore(w io.Writer, specs []service.Spec) error {
	groups := groupsOf(specs)
	ours, err := firebasemerge.LoadOurs(".", service.GroupNames(groups), service.Uses(groups))
	if err != nil {
		return err
	}
	switch {
	case p.firestoreFrom != "":
		return p.deployApp(w, ours, groups)
	case p.replaceRules:
		rules, _, err := firebasemerge.Rules(ours.Rules, ours.Block)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "# Firestore: this repository's rules (groups %s) replace the project's (--replace-rules), and its indexes.\n", strings.Join(service.GroupNames(groups), ", "))
		p.writeRules(w, rules)
		return p.writeIndexes(w, ours.Indexes, ours.Keep)
	}
	fmt.Fprintln(w, "# Indexes and TTL policies the chosen functions need, added with gcloud (none is removed).")
	if err := p.writeIndexes(w, ours.Indexes, ours.Keep); err != nil {
		return err
	}
	merge := "scripts/firebase-merge.sh"
	if len(groups) < len(service.Groups) {
		merge += " --only " + strings.Join(service.GroupNames(groups), ",")
	}
	note := "Firestore rules are not deployed: they would replace your app's own. Merge shardcount's into your app's files " +
		"(" + merge + " PATH_TO_APP) and deploy them from there, or pass --firestore-from PATH_TO_APP; " +
		"a project with no rules of its own may take this repository's with --replace-rules."
	fmt.Fprintln(w, "\n# "+note)
	fmt.Fprintln(os.Stderr, "deploy: note: "+note)
	return nil
}

// deployApp plans the rules and indexes of the app at p.firestoreFrom:
// exactly its files, once they hold shardcount's for groups.
func (p *plan) deployApp(w io.Writer, ours firebasemerge.Ours, groups []service.Group) error {
	files, err := firebasemerge.AppFiles(p.firestoreFrom, p.database)
	if err != nil {
		return fmt.Errorf("--firestore-from: %w", err)
	}
	missing, err := ours.Missing(files)
	if err != nil {
		return fmt.Errorf("--firestore-from: %w", err)
	}
	// The merge to advise keeps the groups the app's block holds besides
	// these: a merge of these alone would take the others' rules out.
	app, err := os.ReadFile(files.Rules)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	held := firebasemerge.AppGroups(string(app))
	var keep []string
	for _, g := range service.Groups {
		if slices.Contains(groups, g) || slices.Contains(held, string(g)) {
			keep = append(keep, string(g))
		}
	}
	if len(missing) > 0 {
		if len(missing) > 3 {
			missing = append(missing[:3], fmt.Sprintf("and %d more", len(missing)-3))
		}
		return fmt.Errorf("--firestore-from: %s: run scripts/firebase-merge.sh --only %s %s first",
			strings.Join(missing, "; "), strings.Join(keep, ","), files.Dir)
	}
	extras, err := ours.Extras(files)
	if err != nil {
		return fmt.Errorf("--firestore-from: %w", err)
	}
	for _, e := range extras {
		note := fmt.Sprintf("%s: deployed as the app's files are (if the app no longer uses that group, scripts/firebase-merge.sh --only %s %s takes it out)",
			e, strings.Join(service.GroupNames(groups), ","), files.Dir)
		fmt.Fprintln(w, "# note: "+note)
		fmt.Fprintln(os.Stderr, "deploy: note: "+note)
	}
	rules := string(app) // the ruleset deployed: the app's file as it is, byte for byte
	fmt.Fprintf(w, "# Firestore: the app's rules and indexes, as %s names them: %s and %s.\n", configName(files), files.Rules, files.Indexes)
	fmt.Fprintf(w, "# The ruleset is %s as it is (sha256 %x).\n", files.Rules, sha256.Sum256(app))
	indexes, err := os.ReadFile(files.Indexes)
	if err != nil {
		return err
	}
	for _, warning := range ours.Warnings(rules, indexes) {
		fmt.Fprintf(w, "# warning: %s: %s\n", files.Rules, warning)
		fmt.Fprintf(os.Stderr, "deploy: warning: %s: %s\n", files.Rules, warning)
	}
	p.writeRules(w, rules)
	return p.writeIndexes(w, indexes, nil)
}

func configName(f firebasemerge.Files) string {
	if f.Declared {
		return f.Config
	}
	return "the app's directory (its firebase.json names none)"
}

// writeRules plans a ruleset with these rules, released for the database:
// a new ruleset through the Firebase Rules API, then the release points to
// it (updated, or created on a first deploy).
func (p *plan) writeRules(w io.Writer, rules string) {
	content, _ := json.Marshal(string(rules)) // a string always marshals
	ruleset := fmt.Sprintf(`{"source":{"files":[{"name":"firestore.rules","content":%s}]}}`, content)
	api := "https://firebaserules.googleapis.com/v1/projects/" + p.project
	release := "projects/" + p.project + "/releases/cloud.firestore"
	if p.database != firebasemerge.DefaultDatabase {
		release += "/" + p.database
	}
	q := shellQuote
	fmt.Fprintln(w, "# Rules through the Firebase Rules API: a new ruleset, then the release points to it.")
	fmt.Fprintln(w, `token=$(gcloud auth print-access-token)`)
	fmt.Fprintf(w, "ruleset=$(curl -sSf -X POST -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d %s | sed -n 's/.*\"name\": *\"\\([^\"]*\\)\".*/\\1/p' | head -n 1)\n",
		q(api+"/rulesets"), q(ruleset))
	fmt.Fprintln(w, `[ -n "$ruleset" ] || { echo "deploy: the Rules API created no ruleset" >&2; exit 1; }`)
	fmt.Fprintf(w, "curl -sSf -X PATCH -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d \"{\\\"release\\\":{\\\"name\\\":\\\"%s\\\",\\\"rulesetName\\\":\\\"$ruleset\\\"}}\" >/dev/null ||\n",
		q("https://firebaserules.googleapis.com/v1/"+release), release)
	fmt.Fprintf(w, "  curl -sSf -X POST -H \"Authorization: Bearer $token\" -H 'Content-Type: application/json' %s -d \"{\\\"name\\\":\\\"%s\\\",\\\"rulesetName\\\":\\\"$ruleset\\\"}\" >/dev/null\n",
		q(api+"/releases"), release)
}

// indexHelper is the plan's one tolerant step: creating an index that
// exists already is fine; any other failure stops the deploy.
const indexHelper = `# Creates a Firestore index; one that exists already is fine, any other failure stops the deploy.
create_index() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then printf '%s\n' "$out"; return 0; fi
  case "$out" in *ALREADY_EXISTS*|*"already exists"*) echo "exists already: $name"; return 0 ;; esac
  printf '%s\n' "$out" >&2
  return 1
}
`

// writeIndexes plans the composite indexes, exemptions and TTL policies of
// an indexes file (those keep keeps), with gcloud.
func (p *plan) writeIndexes(w io.Writer, indexes []byte, keep firebasemerge.Keep) error {
	var file indexcheck.File
	if err := json.Unmarshal(indexes, &file); err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	if bytes.Contains(indexes, []byte(`"vectorConfig"`)) {
		return errors.New("indexes: the file holds a vector index (vectorConfig), which this plan cannot create with gcloud's flags: create it with `gcloud firestore indexes composite create --field-config=...,vector-config=...` or the Firebase CLI, and keep it out of the file deployed here")
	}
	db := "--database=" + p.database
	io.WriteString(w, indexHelper)
	for _, ix := range file.Indexes {
		if keep != nil && !keep(ix.CollectionGroup) {
			continue
		}
		args := []string{"gcloud", "firestore", "indexes", "composite", "create", "--project=" + p.project, db,
			"--collection-group=" + ix.CollectionGroup, "--query-scope=" + strings.ToLower(strings.ReplaceAll(cmp.Or(ix.QueryScope, "COLLECTION"), "_", "-")), "--async"}
		var named []string // the index as a person names it: its group, then each field and order
		for _, f := range ix.Fields {
			cfg := "--field-config=field-path=" + f.FieldPath
			if f.ArrayConfig != "" {
				cfg += ",array-config=" + strings.ToLower(f.ArrayConfig)
			} else {
				cfg += ",order=" + strings.ToLower(f.Order)
			}
			args = append(args, cfg)
			named = append(named, f.FieldPath+" "+strings.ToLower(cmp.Or(f.Order, f.ArrayConfig)))
		}
		fmt.Fprintln(w, "create_index "+shellJoin(append([]string{ix.CollectionGroup + " (" + strings.Join(named, ", ") + ")"}, args...)))
	}
	for _, o := range file.FieldOverrides {
		if keep != nil && !keep(o.CollectionGroup) {
			continue
		}
		update := []string{"gcloud", "firestore", "indexes", "fields", "update", o.FieldPath,
			"--project=" + p.project, db, "--collection-group=" + o.CollectionGroup}
		if len(o.Indexes) == 0 {
			update = append(update, "--disable-indexes")
		}
		for _, ix := range o.Indexes { // the field's own single-field indexes, instead of the defaults
			spec := "query-scope=" + strings.ToLower(strings.ReplaceAll(cmp.Or(ix.QueryScope, "COLLECTION"), "_", "-"))
			if ix.ArrayConfig != "" {
				spec = "array-config=" + strings.ToLower(ix.ArrayConfig) + "," + spec
			} else {
				spec = "order=" + strings.ToLower(ix.Order) + "," + spec
			}
			update = append(update, "--index="+spec)
		}
		if o.Indexes != nil { // an override that sets no index list keeps the defaults, as the Firebase CLI reads it
			fmt.Fprintln(w, shellJoin(append(update, "--async")))
		}
		if o.TTL {
			fmt.Fprintln(w, shellJoin([]string{"gcloud", "firestore", "fields", "ttls", "update", o.FieldPath,
				"--project=" + p.project, db, "--collection-group=" + o.CollectionGroup, "--enable-ttl", "--async"}))
		}
	}
	return nil
}

// groupsOf returns the groups of the chosen functions, in catalog order.
func groupsOf(specs []service.Spec) []service.Group {
	var out []service.Group
	for _, g := range service.Groups {
		if slices.ContainsFunc(specs, func(s service.Spec) bool { return s.Group == g }) {
			out = append(out, g)
		}
	}
	return out
}

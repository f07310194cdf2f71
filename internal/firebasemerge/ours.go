package firebasemerge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Ours are shardcount's rules and indexes for the groups an app deploys.
type Ours struct {
	Rules   string // shardcount's firestore.rules, a template for an app without rules
	Block   string // its block, with the groups' sections only
	Indexes []byte // shardcount's firestore.indexes.json
	Keep    Keep   // which of its collection groups the groups need
}

// LoadOurs reads shardcount's files in the repository at repo, for groups
// (nil: all) whose collection groups keep keeps.
func LoadOurs(repo string, groups []string, keep Keep) (Ours, error) {
	rules, err := os.ReadFile(filepath.Join(repo, "firestore.rules"))
	if err != nil {
		return Ours{}, err
	}
	block, err := Block(string(rules), groups)
	if err != nil {
		return Ours{}, err
	}
	indexes, err := os.ReadFile(filepath.Join(repo, "firestore.indexes.json"))
	if err != nil {
		return Ours{}, err
	}
	return Ours{Rules: string(rules), Block: block, Indexes: indexes, Keep: keep}, nil
}

// read returns a file's content, nil when it does not exist.
func read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Missing lists what the app's files lack of ours, by meaning: the rules
// by their block (indentation and the switch aside; sections of other
// groups may be there too), the indexes parsed. Empty: they hold ours.
func (o Ours) Missing(f Files) ([]string, error) {
	rules, err := read(f.Rules)
	if err != nil {
		return nil, err
	}
	var missing []string
	switch _, e := Block(string(rules), nil); {
	case rules == nil:
		missing = append(missing, f.Rules+" does not exist")
	case e != nil:
		missing = append(missing, f.Rules+" lacks shardcount's rules block")
	case !HasBlock(string(rules), o.Block):
		missing = append(missing, fmt.Sprintf("%s holds another version of shardcount's rules block than this one, or lacks a group's section (it holds %v, these need %v)",
			f.Rules, AppGroups(string(rules)), Groups(o.Block)))
	}
	indexes, err := read(f.Indexes)
	if err != nil {
		return nil, err
	}
	lacks, err := MissingIndexes(indexes, o.Indexes, o.Keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Indexes, err)
	}
	for _, l := range lacks {
		missing = append(missing, f.Indexes+" lacks "+l)
	}
	return missing, nil
}

// AppGroups are the groups whose sections an app's rules' block holds.
func AppGroups(rules string) []string {
	block, err := Block(rules, nil)
	if err != nil {
		return nil
	}
	return Groups(block)
}

// Extras lists what the app's files hold of shardcount's groups other
// than o's: sections of the block, and indexes and overrides equal to
// theirs. Deployed as the app's files are; a merge for o's groups takes
// them out.
func (o Ours) Extras(f Files) ([]string, error) {
	var extras []string
	rules, err := read(f.Rules)
	if err != nil {
		return nil, err
	}
	for _, g := range AppGroups(string(rules)) {
		if !slices.Contains(Groups(o.Block), g) {
			extras = append(extras, fmt.Sprintf("%s holds shardcount's rules of the group %s", f.Rules, g))
		}
	}
	indexes, err := read(f.Indexes)
	if err != nil {
		return nil, err
	}
	unused, err := UnusedIndexes(indexes, o.Indexes, o.Keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Indexes, err)
	}
	for _, u := range unused {
		extras = append(extras, f.Indexes+" holds "+u+" of another group")
	}
	return extras, nil
}

// Warnings are what to check by hand in an app's rules and indexes: its
// rules that also match shardcount's documents, and its collections that
// shardcount's collection-group rules and field overrides also apply to.
// Every merge, check and deploy prints them, up to date or not.
func (o Ours) Warnings(rules string, indexes []byte) []string {
	return append(Overlaps(rules), o.Shared(rules, indexes)...)
}

// Merge returns the app's files with ours merged in, and what to check by
// hand. A file that holds ours already is returned as it is, its
// formatting too; an app without a rules file starts from shardcount's.
func (o Ours) Merge(f Files) (rules, indexes []byte, warnings []string, err error) {
	appRules, err := read(f.Rules)
	if err != nil {
		return nil, nil, nil, err
	}
	merged := string(appRules)
	if appRules == nil || !HasExactly(merged, o.Block) {
		if appRules == nil {
			merged = o.Rules
		}
		if merged, _, err = Rules(merged, o.Block); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.Rules, err)
		}
	}
	appIndexes, err := read(f.Indexes)
	if err != nil {
		return nil, nil, nil, err
	}
	warnings = o.Warnings(merged, appIndexes)
	mergedIndexes := appIndexes
	lacks, err := MissingIndexes(appIndexes, o.Indexes, o.Keep)
	var unused []string
	if err == nil {
		unused, err = UnusedIndexes(appIndexes, o.Indexes, o.Keep)
	}
	if err == nil && (appIndexes == nil || len(lacks) > 0 || len(unused) > 0) {
		mergedIndexes, err = Indexes(appIndexes, o.Indexes, o.Keep)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", f.Indexes, err)
	}
	if f.Config != "" && !f.Declared {
		warnings = append(warnings, fmt.Sprintf(`%s has no "firestore" entry: add {"rules": %q, "indexes": %q} so firebase deploy deploys them`,
			f.Config, rel(f.Dir, f.Rules), rel(f.Dir, f.Indexes)))
	}
	for _, key := range f.Unnamed {
		file := map[string]string{"rules": f.Rules, "indexes": f.Indexes}[key]
		warnings = append(warnings, fmt.Sprintf(`%s's "firestore" entry names no %s file: add "%s": %q so firebase deploy deploys %s`,
			f.Config, key, key, rel(f.Dir, file), rel(f.Dir, file)))
	}
	return []byte(merged), mergedIndexes, warnings, nil
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}

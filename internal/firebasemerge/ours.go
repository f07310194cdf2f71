package firebasemerge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// by their block (indentation and the switch aside, and no section of a
// group not deployed), the indexes parsed. Empty: they hold ours.
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
		have, _ := Block(string(rules), nil)
		missing = append(missing, fmt.Sprintf("%s holds another version of shardcount's rules block than this one, or the sections of other groups (it has %v, the groups deployed are %v)",
			f.Rules, Groups(have), Groups(o.Block)))
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
	unused, err := UnusedIndexes(indexes, o.Indexes, o.Keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Indexes, err)
	}
	for _, u := range unused {
		missing = append(missing, f.Indexes+" holds "+u+", of a group not deployed")
	}
	return missing, nil
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
	if appRules == nil || !HasBlock(merged, o.Block) {
		if appRules == nil {
			merged = o.Rules
		}
		if merged, _, err = Rules(merged, o.Block); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.Rules, err)
		}
	}
	warnings = Overlaps(merged)
	appIndexes, err := read(f.Indexes)
	if err != nil {
		return nil, nil, nil, err
	}
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

// Command firebasemerge brings shardcount's Firestore rules and indexes
// into an existing Firebase app's directory, in place: the rules block is
// spliced into (or refreshed in) APP_DIR/firestore.rules, the indexes and
// field overrides added to APP_DIR/firestore.indexes.json. The app's own
// rules and indexes stay as they are; running it again changes nothing.
// scripts/firebase-merge.sh runs it from the repository's root.
//
//	firebasemerge [-check] APP_DIR
//
// With -check it writes nothing and exits 1 when the app's files lack the
// current block or an index (scripts/deploy.sh checks this way).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/shardcount/shardcount/internal/firebasemerge"
)

func main() {
	check := flag.Bool("check", false, "write nothing; exit 1 if the app's files are not up to date")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: firebasemerge [-check] APP_DIR   (run from shardcount's root)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	stale, err := run(flag.Arg(0), *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firebasemerge:", err)
		os.Exit(2)
	}
	if *check && stale {
		os.Exit(1)
	}
}

// run merges into dir's files (or only compares, with check) and reports
// whether a file was not up to date.
func run(dir string, check bool) (bool, error) {
	ourRules, err := os.ReadFile("firestore.rules")
	if err != nil {
		return false, fmt.Errorf("%w (run it from shardcount's root)", err)
	}
	block, err := firebasemerge.Block(string(ourRules))
	if err != nil {
		return false, err
	}
	ourIndexes, err := os.ReadFile("firestore.indexes.json")
	if err != nil {
		return false, err
	}

	rulesPath := filepath.Join(dir, "firestore.rules")
	appRules, err := os.ReadFile(rulesPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	base := appRules
	if base == nil {
		base = ourRules // an app without rules starts from ours
	}
	merged, warnings, err := firebasemerge.Rules(string(base), block)
	if err != nil {
		return false, fmt.Errorf("%s: %w", rulesPath, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "firebasemerge: warning: %s: %s\n", rulesPath, w)
	}
	indexesPath := filepath.Join(dir, "firestore.indexes.json")
	appIndexes, err := os.ReadFile(indexesPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	mergedIndexes, err := firebasemerge.Indexes(appIndexes, ourIndexes)
	if err != nil {
		return false, fmt.Errorf("%s: %w", indexesPath, err)
	}

	stale := false
	for _, f := range []struct {
		path      string
		was, want []byte // was is nil for a file that does not exist
	}{{rulesPath, appRules, []byte(merged)}, {indexesPath, appIndexes, mergedIndexes}} {
		if f.was != nil && bytes.Equal(f.was, f.want) {
			fmt.Printf("%s: up to date\n", f.path)
			continue
		}
		stale = true
		if check {
			fmt.Printf("%s: lacks shardcount's current rules or indexes (run scripts/firebase-merge.sh %s)\n", f.path, dir)
			continue
		}
		if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
			return false, err
		}
		fmt.Printf("%s: merged\n", f.path)
	}
	if !check && stale {
		fmt.Printf("Deploy them from %s with its Firebase CLI (firebase deploy --only firestore), or with scripts/deploy.sh --firestore-from %s.\n", dir, dir)
	}
	return stale, nil
}

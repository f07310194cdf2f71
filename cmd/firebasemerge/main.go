// Command firebasemerge brings shardcount's Firestore rules and indexes
// into an existing Firebase app's files, in place: the files the app's
// firebase.json names (or firestore.rules and firestore.indexes.json in its
// directory). The rules block is spliced into (or refreshed in) the rules,
// the indexes and field overrides added to the indexes, for the groups the
// app deploys. The app's own rules and indexes stay as they are; running it
// again changes nothing. scripts/firebase-merge.sh runs it.
//
//	firebasemerge [-check] [-only GROUPS] [-database DB] [-repo DIR] APP_DIR
//	firebasemerge -where [-database DB] APP_DIR
//
// With -check it writes nothing and exits 1 when the app's files lack
// shardcount's current block or an index, compared by meaning as
// scripts/deploy.sh --firestore-from compares them. With -where it prints
// the app's two files and the groups its rules' block holds
// (scripts/dev.sh runs the emulator with its rules, and checks them for
// those groups).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/firebasemerge"
	"github.com/shardcount/shardcount/internal/service"
)

func main() {
	check := flag.Bool("check", false, "write nothing; exit 1 if the app's files are not up to date")
	only := flag.String("only", "", "the groups the app deploys (counters, instruments), comma-separated; default all")
	database := flag.String("database", "", "the Firestore database whose files firebase.json names (default: FIRESTORE_DATABASE of the app's "+config.FileName+", or (default))")
	repo := flag.String("repo", ".", "shardcount's repository")
	where := flag.Bool("where", false, "print the app's rules and indexes files (as its firebase.json names them) and the groups its rules' block holds (comma-separated), tab-separated, and exit")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: firebasemerge [-check] [-only GROUPS] [-database DB] [-repo DIR] APP_DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	db, err := appDatabase(flag.Arg(0), *database)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firebasemerge:", err)
		os.Exit(2)
	}
	*database = db
	if *where {
		files, err := firebasemerge.AppFiles(flag.Arg(0), *database)
		if err != nil {
			fmt.Fprintln(os.Stderr, "firebasemerge:", err)
			os.Exit(2)
		}
		var groups []string
		if rules, err := os.ReadFile(files.Rules); err == nil {
			if block, err := firebasemerge.Block(string(rules), nil); err == nil {
				groups = firebasemerge.Groups(block)
			}
		}
		fmt.Printf("%s\t%s\t%s\n", files.Rules, files.Indexes, strings.Join(groups, ","))
		return
	}
	stale, err := run(*repo, flag.Arg(0), *only, *database, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firebasemerge:", err)
		os.Exit(2)
	}
	if *check && stale {
		os.Exit(1)
	}
}

// run merges into the app's files (or only checks, with check) and reports
// whether they were not up to date.
func run(repo, dir, only, database string, check bool) (bool, error) {
	groups, err := service.ParseGroups(only)
	if err != nil {
		return false, fmt.Errorf("-only: %w", err)
	}
	ours, err := firebasemerge.LoadOurs(repo, service.GroupNames(groups), service.Uses(groups))
	if err != nil {
		return false, err
	}
	files, err := firebasemerge.AppFiles(dir, database)
	if err != nil {
		return false, err
	}
	if same, _ := sameDir(repo, files.Dir); same && !check {
		return false, fmt.Errorf("%s is shardcount's own checkout, whose files are the source of the merge: pass your app's directory", files.Dir)
	}
	if check {
		missing, err := ours.Missing(files)
		if err != nil {
			return false, err
		}
		for _, m := range missing {
			fmt.Println(m)
		}
		extras, err := ours.Extras(files)
		if err != nil {
			return false, err
		}
		for _, e := range extras {
			fmt.Printf("note: %s (deployed as it is; a merge with these groups takes it out)\n", e)
		}
		if len(missing) == 0 {
			fmt.Printf("%s and %s hold shardcount's rules and indexes\n", files.Rules, files.Indexes)
		}
		rules, _ := os.ReadFile(files.Rules)
		indexes, _ := os.ReadFile(files.Indexes)
		for _, w := range ours.Warnings(string(rules), indexes) {
			fmt.Fprintf(os.Stderr, "firebasemerge: warning: %s: %s\n", files.Rules, w)
		}
		settings := filepath.Join(files.Dir, config.FileName)
		if _, err := os.Stat(settings); err == nil {
			if _, err := config.ReadFile(settings); err != nil {
				fmt.Println(err)
				return true, nil
			}
		}
		return len(missing) > 0, nil
	}
	rules, indexes, warnings, err := ours.Merge(files)
	if err != nil {
		return false, err
	}
	if err := createSettings(files.Dir); err != nil {
		return false, err
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "firebasemerge: warning: %s: %s\n", files.Rules, w)
	}
	stale := false
	for _, f := range []struct {
		path string
		want []byte
	}{{files.Rules, rules}, {files.Indexes, indexes}} {
		if was, err := os.ReadFile(f.path); err == nil && bytes.Equal(was, f.want) {
			fmt.Printf("%s: up to date\n", f.path)
			continue
		}
		stale = true
		if _, err := os.Stat(filepath.Dir(f.path)); os.IsNotExist(err) {
			// firebase.json names a directory that is not there: say so,
			// in case it is a typo.
			fmt.Printf("%s: created (firebase.json names it)\n", filepath.Dir(f.path))
		}
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
			return false, err
		}
		fmt.Printf("%s: merged\n", f.path)
	}
	if stale {
		deploy := "scripts/deploy.sh"
		if only != "" {
			deploy += " --only " + only
		}
		fmt.Printf("Deploy them from %s with its Firebase CLI (firebase deploy --only firestore), or with %s --firestore-from %s.\n", files.Dir, deploy, files.Dir)
	}
	return stale, nil
}

// appDatabase is the database whose files are merged: the one asked for,
// which must be the app's settings file's when it names one, or that one.
func appDatabase(dir, asked string) (string, error) {
	inFile := config.File{}
	if path := filepath.Join(dir, config.FileName); fileExists(path) {
		f, err := config.ReadFile(path)
		if err != nil {
			return "", err
		}
		inFile = f
	}
	db := inFile.Value("FIRESTORE_DATABASE")
	switch {
	case asked == "":
		return db, nil
	case asked != db && inFile.Path != "":
		return "", fmt.Errorf("FIRESTORE_DATABASE is %s here and %s in %s: the file decides; unset it here", asked, db, inFile.Path)
	}
	return asked, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// createSettings writes the app's settings file, with every setting at its
// default and an example kind, unless it has one.
func createSettings(dir string) error {
	path := filepath.Join(dir, config.FileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil // the app's own: never overwritten
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(config.Template()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%s: created: the settings your functions deploy and run with (its kinds: likes, views); edit it, and keep it in your repository\n", path)
	return nil
}

// sameDir reports whether two paths name one directory.
func sameDir(a, b string) (bool, error) {
	ia, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(ia, ib), nil
}

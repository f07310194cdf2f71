package firebasemerge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Files are an app's Firestore rules and indexes files, as its
// firebase.json names them.
type Files struct {
	Dir     string // the app's directory
	Rules   string // absolute paths
	Indexes string
	// Config is the app's firebase.json, "" when it has none; Declared
	// says whether it names the files (a "firestore" entry), and Unnamed
	// lists the keys ("rules", "indexes") its entry lacks, whose files
	// firebase deploy does not deploy.
	Config   string
	Declared bool
	Unnamed  []string
}

// DefaultDatabase is the database firebase.json means when it names none.
const DefaultDatabase = "(default)"

// AppFiles returns the files of database of the app in dir: those its
// firebase.json names ("firestore": {"rules", "indexes"}, or a list of
// such entries with "database"), else firestore.rules and
// firestore.indexes.json in dir.
func AppFiles(dir, database string) (Files, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Files{}, err
	}
	f := Files{Dir: dir, Rules: filepath.Join(dir, "firestore.rules"), Indexes: filepath.Join(dir, "firestore.indexes.json")}
	config := filepath.Join(dir, "firebase.json")
	b, err := os.ReadFile(config)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return Files{}, err
	}
	f.Config = config
	var c struct {
		Firestore json.RawMessage `json:"firestore"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Files{}, fmt.Errorf("%s: %w", config, err)
	}
	type entry struct {
		Database string `json:"database"`
		Rules    string `json:"rules"`
		Indexes  string `json:"indexes"`
	}
	var entries []entry
	switch {
	case len(c.Firestore) == 0 || string(c.Firestore) == "null":
		return f, nil
	case c.Firestore[0] == '[':
		err = json.Unmarshal(c.Firestore, &entries)
	default:
		var one entry
		err = json.Unmarshal(c.Firestore, &one)
		entries = []entry{one}
	}
	if err != nil {
		return Files{}, fmt.Errorf("%s: its \"firestore\" entry: %w", config, err)
	}
	var found []string
	for _, e := range entries {
		db := e.Database
		if db == "" {
			db = DefaultDatabase
		}
		found = append(found, db)
		if db != database {
			continue
		}
		f.Declared = true
		if e.Rules != "" {
			f.Rules = filepath.Join(dir, e.Rules)
		} else {
			f.Unnamed = append(f.Unnamed, "rules")
		}
		if e.Indexes != "" {
			f.Indexes = filepath.Join(dir, e.Indexes)
		} else {
			f.Unnamed = append(f.Unnamed, "indexes")
		}
		return f, nil
	}
	return Files{}, fmt.Errorf("%s declares the Firestore files of databases %v, not of %s", config, found, database)
}

package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func planOf(t *testing.T, settings string) *plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shardcount.env.yaml")
	os.WriteFile(path, []byte(settings), 0o644)
	p := &plan{project: "demo-x", region: "us-central1", only: "counters"}
	if err := p.load(path); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTheDeployedSettingsAreCompared: what a real deploy refuses to
// change without --allow-kind-changes, function by function.
func TestTheDeployedSettingsAreCompared(t *testing.T) {
	p := planOf(t, "COUNTER_KINDS: '{\"likes\": {\"unique\": true}, \"views\": {}}'\nINSTRUMENT_SHARDS: '3'\n")
	deployed := func(env map[string]string) lister {
		return func(string, string) (map[string]map[string]string, error) {
			return map[string]map[string]string{"incrementCounter": env}, nil
		}
	}
	for name, tc := range map[string]struct {
		list lister
		want string // in the error; "" for none
	}{
		"the same":          {deployed(map[string]string{"COUNTER_KINDS": `{"likes": {"unique": true}}`}), ""},
		"a kind added":      {deployed(map[string]string{}), ""},
		"a kind dropped":    {deployed(map[string]string{"COUNTER_KINDS": `{"polls": {}}`}), `incrementCounter: counts the kind "polls"`},
		"unique no more":    {deployed(map[string]string{"COUNTER_KINDS": `{"views": {"unique": true}}`}), `the kind "views" unique (each user once)`},
		"join_only dropped": {deployed(map[string]string{"COUNTER_KINDS": `{"likes": {"unique": true, "join_only": true}}`}), `the kind "likes" unique, join-only (each user once; end users never leave);`},
		"another database":  {deployed(map[string]string{"FIRESTORE_DATABASE": "counters"}), "in the database counters"},
		"fewer instruments": {deployed(map[string]string{"INSTRUMENT_SHARDS": "10"}), "lowers it to 3"},
		"unreadable":        {deployed(map[string]string{"COUNTER_KINDS": "{"}), "cannot read"},
		"gcloud fails": {func(string, string) (map[string]map[string]string, error) {
			return nil, errors.New("PERMISSION_DENIED")
		}, "PERMISSION_DENIED"},
		"nothing deployed": {func(string, string) (map[string]map[string]string, error) { return nil, nil }, ""},
	} {
		err := p.checkDeployed(io.Discard, tc.list, false)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if tc.want != "" && tc.want != "PERMISSION_DENIED" {
			if err := p.checkDeployed(io.Discard, tc.list, true); err != nil {
				t.Errorf("%s with --allow-kind-changes: %v", name, err)
			}
		}
	}
}

// TestJoinOnlyAddedIsRefused: viewers who could leave can no longer; a
// deploy says so, once for all the functions alike.
func TestJoinOnlyAddedIsRefused(t *testing.T) {
	p := planOf(t, "COUNTER_KINDS: '{\"viewers\": {\"unique\": true, \"join_only\": true}}'\n")
	env := map[string]string{"COUNTER_KINDS": `{"viewers": {"unique": true}}`}
	err := p.checkDeployed(io.Discard, func(string, string) (map[string]map[string]string, error) {
		return map[string]map[string]string{"incrementCounter": env, "getCounter": env}, nil
	}, false)
	if err == nil || strings.Count(err.Error(), "counts the kind") != 1 ||
		!strings.Contains(err.Error(), `incrementCounter, getCounter: counts the kind "viewers" unique (each user once);`) || !strings.Contains(err.Error(), "makes it unique, join-only") {
		t.Errorf("join_only added: %v", err)
	}
}

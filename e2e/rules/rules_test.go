// Package rules tests firestore.rules in the Firestore emulator: what a
// client may do directly, signed in or not, on every kind of document.
package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// documents holds one document of each kind, by the path seeded.
var documents = []struct{ kind, path string }{
	{"counter", "counters/c1"},
	{"shard", "counters/c1/shards/0"},
	{"idempotency record", "counters/c1/idempotency_keys/k1"},
	{"roll-up slot", "counters/c1/rollup_slots/1"},
	{"instrument", "instruments/i1"},
	{"unknown collection", "others/o1"},
}

var ops = []string{"get", "list", "create", "update", "delete"}

// loadRules installs rules for one project of the emulator.
func loadRules(t *testing.T, project, rules string) {
	t.Helper()
	host, _ := testenv.EmulatorHost()
	body, _ := json.Marshal(map[string]any{"rules": map[string]any{"files": []map[string]string{{"name": "firestore.rules", "content": rules}}}})
	req, _ := http.NewRequest("PUT", "http://"+host+"/emulator/v1/projects/"+project+":securityRules", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var msg bytes.Buffer
		msg.ReadFrom(resp.Body)
		t.Fatalf("load rules: %s %s", resp.Status, msg.String())
	}
}

// seed writes every document as an admin (rules do not apply).
func seed(t *testing.T, project string) {
	fs := testenv.Firestore(t, project)
	for _, d := range documents {
		if _, err := fs.Doc(d.path).Set(context.Background(), map[string]any{"count": 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// do performs op on path over the REST API as the holder of token ("" for
// nobody) and returns the HTTP status.
func do(t *testing.T, project, token, op, path string) int {
	t.Helper()
	host, _ := testenv.EmulatorHost()
	docs := "http://" + host + "/v1/projects/" + project + "/databases/(default)/documents/"
	parent, id := path[:strings.LastIndex(path, "/")], path[strings.LastIndex(path, "/")+1:]
	fields := `{"fields": {"count": {"integerValue": "99"}}}`
	var req *http.Request
	switch op {
	case "get":
		req, _ = http.NewRequest("GET", docs+path, nil)
	case "list":
		req, _ = http.NewRequest("GET", docs+parent, nil)
	case "create":
		req, _ = http.NewRequest("POST", docs+parent+"?documentId="+id+"-new", strings.NewReader(fields))
	case "update":
		req, _ = http.NewRequest("PATCH", docs+path+"?currentDocument.exists=true", strings.NewReader(fields))
	case "delete":
		req, _ = http.NewRequest("DELETE", docs+path, nil)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRulesMatrix(t *testing.T) {
	rules, err := os.ReadFile("../../firestore.rules")
	if err != nil {
		t.Fatal(err)
	}
	const off, on = "function anonymousCounterReads() {\n      return false;", "function anonymousCounterReads() {\n      return true;"
	if !strings.Contains(string(rules), off) {
		t.Fatalf("firestore.rules has no anonymousCounterReads switch set to false")
	}
	for _, anonymous := range []bool{false, true} {
		t.Run(fmt.Sprintf("anonymousCounterReads=%v", anonymous), func(t *testing.T) {
			project := testenv.NewProjectID("rules")
			text := string(rules)
			if anonymous {
				text = strings.Replace(text, off, on, 1)
			}
			loadRules(t, project, text)
			seed(t, project)
			userA := testenv.ValidIDToken(project, "user-a")
			for _, who := range []struct{ name, token string }{{"no token", ""}, {"user A", userA}} {
				for _, d := range documents {
					for _, op := range ops {
						read := op == "get" || op == "list"
						allowed := read && (d.kind == "instrument" && who.token != "" ||
							d.kind == "counter" && (who.token != "" || anonymous))
						want := http.StatusForbidden
						if allowed {
							want = http.StatusOK
						}
						if got := do(t, project, who.token, op, d.path); got != want {
							t.Errorf("%s %s %s: %d, want %d", who.name, op, d.kind, got, want)
						}
					}
				}
			}
		})
	}
}

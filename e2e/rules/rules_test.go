// Package rules tests the project's Firestore security rules in the
// emulator, what a client may do directly, signed in or not, on every kind
// of document: as firestore.rules, and merged by scripts/firebase-merge.sh
// into a sample app's own rules, whose collections must keep obeying the
// app.
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
	"time"

	"github.com/shardcount/shardcount/internal/firebasemerge"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// documents holds one document of each kind, by the path seeded.
var documents = []struct{ kind, path string }{
	{"counter", "counters/c1"},
	{"shard", "counters/c1/shards/0"},
	{"idempotency record", "counters/c1/idempotency_keys/k1"},
	{"roll-up slot", "counters/c1/rollup_slots/1"},
	{"own member", "counters/c1/members/user-a"},
	{"another's member", "counters/c1/members/user-b"},
	{"time window", "counters/c1/windows/hour_2026-01-01T00:00:00Z"},
	{"instrument", "instruments/i1"},
	{"activity marker", "counter_activity/c1"},
	{"shardcount state", "shardcount/reconcile"},
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

// seed writes documents as an admin (rules do not apply).
func seed(t *testing.T, project string, paths ...string) {
	fs := testenv.Firestore(t, project)
	for _, p := range paths {
		if _, err := fs.Doc(p).Set(context.Background(), map[string]any{"count": 1, "author": "user-a"}); err != nil {
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
	fields := `{"fields": {"count": {"integerValue": "99"}, "author": {"stringValue": "user-a"}}}`
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

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const switchOff, switchOn = "function shardcountAnonymousCounterReads() {\n      return false;", "function shardcountAnonymousCounterReads() {\n      return true;"

// matrix runs every operation on every kind of document, with no token
// and as user A, and checks the status against the rules' table.
func matrix(t *testing.T, rules string, anonymousReads bool) string {
	project := testenv.NewProjectID("rules")
	loadRules(t, project, rules)
	var paths []string
	for _, d := range documents {
		paths = append(paths, d.path)
	}
	seed(t, project, paths...)
	userA := testenv.ValidIDToken(project, "user-a")
	for _, who := range []struct{ name, token string }{{"no token", ""}, {"user A", userA}} {
		for _, d := range documents {
			for _, op := range ops {
				signedIn := who.token != ""
				allowed := op == "get" && (d.kind == "instrument" && signedIn ||
					d.kind == "counter" && (signedIn || anonymousReads) ||
					d.kind == "own member" && signedIn)
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
	return project
}

func TestRulesMatrix(t *testing.T) {
	rules := readFile(t, "../../firestore.rules")
	if !strings.Contains(rules, switchOff) {
		t.Fatalf("firestore.rules has no shardcountAnonymousCounterReads switch set to false")
	}
	for _, anonymous := range []bool{false, true} {
		t.Run(fmt.Sprintf("anonymousCounterReads=%v", anonymous), func(t *testing.T) {
			text := rules
			if anonymous {
				text = strings.Replace(text, switchOff, switchOn, 1)
			}
			matrix(t, text, anonymous)
		})
	}
}

// TestMergedIntoAnApp runs the matrix on the sample app's rules with
// shardcount's block merged in (internal/firebasemerge, what
// scripts/firebase-merge.sh does), and checks the app's own collections
// still obey the app's rules.
func TestMergedIntoAnApp(t *testing.T) {
	block, err := firebasemerge.Block(readFile(t, "../../firestore.rules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	merged, warnings, err := firebasemerge.Rules(readFile(t, "../../internal/firebasemerge/testdata/app/firestore.rules"), block)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v %v", err, warnings)
	}
	project := matrix(t, merged, false)
	seed(t, project, "posts/p1", "users/user-a", "users/user-b")
	userA := testenv.ValidIDToken(project, "user-a")
	for _, c := range []struct {
		who, token, op, path string
		want                 int
	}{
		{"user A", userA, "get", "posts/p1", 200},
		{"user A", userA, "list", "posts/p1", 200},
		{"user A", userA, "create", "posts/p1", 200},
		{"no token", "", "get", "posts/p1", 403},
		{"user A", userA, "get", "users/user-a", 200},
		{"user A", userA, "update", "users/user-a", 200},
		{"user A", userA, "get", "users/user-b", 403},
	} {
		if got := do(t, project, c.token, c.op, c.path); got != c.want {
			t.Errorf("the app's own rules, %s %s %s: %d, want %d", c.who, c.op, c.path, got, c.want)
		}
	}
}

// TestAUsersLikes: a user lists their own member documents across
// counters, one collection-group query (members where uid == theirs,
// newest first; of one kind too), and nobody else's.
func TestAUsersLikes(t *testing.T) {
	project := testenv.NewProjectID("likes")
	loadRules(t, project, readFile(t, "../../firestore.rules"))
	fs := testenv.Firestore(t, project)
	for _, m := range []struct{ counter, uid string }{{"likes:p1", "user-a"}, {"likes:p2", "user-a"}, {"likes:p1", "user-b"}, {"viewers:p1", "user-a"}} {
		if _, err := fs.Doc("counters/"+m.counter+"/members/"+m.uid).Set(context.Background(),
			map[string]any{"uid": m.uid, "counter_id": m.counter, "kind": strings.Split(m.counter, ":")[0], "joined_at": time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	host, _ := testenv.EmulatorHost()
	eq := func(field, v string) map[string]any {
		return map[string]any{"fieldFilter": map[string]any{"field": map[string]any{"fieldPath": field}, "op": "EQUAL", "value": map[string]any{"stringValue": v}}}
	}
	query := func(token, uid string, kind ...string) (int, int) {
		q := map[string]any{"from": []any{map[string]any{"collectionId": "members", "allDescendants": true}},
			"orderBy": []any{map[string]any{"field": map[string]any{"fieldPath": "joined_at"}, "direction": "DESCENDING"}}}
		switch {
		case len(kind) > 0:
			q["where"] = map[string]any{"compositeFilter": map[string]any{"op": "AND", "filters": []any{eq("uid", uid), eq("kind", kind[0])}}}
		case uid != "":
			q["where"] = eq("uid", uid)
		}
		body, _ := json.Marshal(map[string]any{"structuredQuery": q})
		req, _ := http.NewRequest("POST", "http://"+host+"/v1/projects/"+project+"/databases/(default)/documents:runQuery", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var results []struct {
			Document *struct{ Name string } `json:"document"`
		}
		json.NewDecoder(resp.Body).Decode(&results)
		n := 0
		for _, r := range results {
			if r.Document != nil {
				n++
			}
		}
		return resp.StatusCode, n
	}
	userA := testenv.ValidIDToken(project, "user-a")
	if status, n := query(userA, "user-a"); status != http.StatusOK || n != 3 {
		t.Errorf("user A's memberships: %d, %d documents; want 200 and 3", status, n)
	}
	if status, n := query(userA, "user-a", "likes"); status != http.StatusOK || n != 2 {
		t.Errorf("user A's likes: %d, %d documents; want 200 and 2", status, n)
	}
	for _, kind := range [][]string{nil, {"likes"}} {
		if status, _ := query(userA, "user-b", kind...); status != http.StatusForbidden {
			t.Errorf("user B's likes (kind %v), as user A: %d, want 403", kind, status)
		}
	}
	if status, _ := query(userA, ""); status != http.StatusForbidden {
		t.Errorf("every member document, as user A: %d, want 403", status)
	}
}

// TestMirroredFieldsAreShardcounts: the line docs/guides/social-app.md
// gives an app's post rule keeps users from writing the fields the roll-up
// mirrors counts into, and lets the author edit the rest.
func TestMirroredFieldsAreShardcounts(t *testing.T) {
	guide := readFile(t, "../../docs/guides/social-app.md")
	_, after, ok := strings.Cut(guide, "<!-- rules: mirrored fields, in e2e/rules -->\n```\n")
	line, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("docs/guides/social-app.md gives no rule for mirrored fields")
	}
	app := strings.Replace(readFile(t, "../../internal/firebasemerge/testdata/app/firestore.rules"),
		"match /posts/{postId} {\n", "match /posts/{postId} {\n      "+line, 1)
	block, err := firebasemerge.Block(readFile(t, "../../firestore.rules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	merged, _, err := firebasemerge.Rules(app, block)
	if err != nil {
		t.Fatal(err)
	}
	project := testenv.NewProjectID("mirror")
	loadRules(t, project, merged)
	fs := testenv.Firestore(t, project)
	if _, err := fs.Doc("posts/p1").Set(context.Background(), map[string]any{"author": "user-a", "text": "hi", "likes": 3}); err != nil {
		t.Fatal(err)
	}
	host, _ := testenv.EmulatorHost()
	patch := func(token, field, value string) int {
		t.Helper()
		url := fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/posts/p1?updateMask.fieldPaths=%s", host, project, field)
		req, _ := http.NewRequest("PATCH", url, strings.NewReader(`{"fields": {"`+field+`": `+value+`}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	author, other := testenv.ValidIDToken(project, "user-a"), testenv.ValidIDToken(project, "user-b")
	for _, c := range []struct {
		who, token, field, value string
		want                     int
	}{
		{"the author", author, "text", `{"stringValue": "edited"}`, 200},
		{"the author", author, "likes", `{"integerValue": "1000000"}`, 403},
		{"the author", author, "reactions", `{"mapValue": {}}`, 403},
		{"another user", other, "text", `{"stringValue": "mine now"}`, 403},
	} {
		if got := patch(c.token, c.field, c.value); got != c.want {
			t.Errorf("%s writes %s: %d, want %d", c.who, c.field, got, c.want)
		}
	}
}

// Package clients runs shardcount's web client (client/web) the way apps
// run it: built by scripts/build-client.sh (type-checked with TypeScript,
// bundled with esbuild), installed in an app, in Node with the Firebase JS
// SDK against scripts/dev.sh, its retry rule against answers
// scripts/dev.sh does not give on demand. (The web app uses it in
// Chromium: e2e/browser.)
package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/firebasemerge"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// block is the code block in lang of the doc at path marked <!-- mark -->.
func block(t *testing.T, path, mark, lang string) []byte {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(mark) + " -->\n```" + lang + "\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no %s block marked <!-- %s -->", path, lang, mark)
	}
	return m[1]
}

// node runs script in Node in an app that installed the client, with
// files (the docs' blocks it imports) beside it.
func node(t *testing.T, app, script string, files map[string][]byte, env ...string) string {
	t.Helper()
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	files[script] = b
	if files["connect.mjs"], err = os.ReadFile("connect.mjs"); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(app, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("node", script)
	cmd.Dir, cmd.Env = app, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	return string(out)
}

// recipe is docs/guides/likes.md's recipe, as node.mjs imports it.
func recipe(t *testing.T) map[string][]byte {
	return map[string][]byte{"recipe.mjs": block(t, "../../docs/guides/likes.md", "recipe: received", "js")}
}

// What the stand-ins for the functions answer: a deployed function's 503
// (retry after 1 s), and a gateway's 504 for an answer it lost.
const (
	busy           = `{"error":{"status":"UNAVAILABLE","message":"busy","details":{"code":"UNAVAILABLE","retry_after_seconds":1}}}`
	gatewayTimeout = "<html>upstream request timeout</html>"
)

// kinds are the social app guide's kinds, and the likes guide's recipe's.
func kinds(t *testing.T) string {
	guide, err := os.ReadFile("../../docs/guides/social-app.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`COUNTER_KINDS: '(.*)'`).FindSubmatch(guide)
	if m == nil {
		t.Fatal("docs/guides/social-app.md declares no COUNTER_KINDS")
	}
	var k map[string]json.RawMessage
	if err := json.Unmarshal(m[1], &k); err != nil {
		t.Fatalf("the social app guide's kinds: %v", err)
	}
	k["received"] = json.RawMessage(`{"decrement": "users"}`)
	k["watchers"] = json.RawMessage(`{"distinct": true}`)
	b, _ := json.Marshal(k)
	return string(b)
}

// appRules writes the rules of an app such as the guide's: its own (posts
// any signed-in user reads: the feed's live page listens to them) with
// shardcount's block merged in, as scripts/firebase-merge.sh does.
func appRules(t *testing.T, root string) string {
	t.Helper()
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	block, err := firebasemerge.Block(read("firestore.rules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	merged, _, err := firebasemerge.Rules(read("internal/firebasemerge/testdata/app/firestore.rules"), block)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "firestore.rules")
	if err := os.WriteFile(path, []byte(merged), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTheWebClient(t *testing.T) {
	t.Parallel() // beside the install's npm work (install_test.go)
	root, _ := filepath.Abs("../..")
	app := testenv.WebClientApp(t, root) // scripts/build-client.sh's package, type-checked and bundled
	// SHARD_COUNT_CACHE short: node.mjs makes a deleted counter again, after
	// reusable_after (this plus FIRESTORE_DEADLINE twice, and a second).
	dev := testenv.StartDev(t, root, "AUTH=required", "COUNTER_KINDS="+kinds(t), "RULES="+appRules(t, root), "SHARD_COUNT_CACHE=2s")
	run := fmt.Sprint(time.Now().UnixNano())
	env := []string{"PROJECT=demo-shardcount", "RUN=" + run, "AUTH_EMULATOR=" + dev.AuthHost(),
		"FIRESTORE=" + dev.FirestoreHost()}
	// node.mjs's posts (and the recipe's, -b), as the app's backend writes them: the guide's
	// kinds count only posts that exist (keys_in).
	db := testenv.FirestoreAt(t, dev.FirestoreHost(), testenv.AuthProject())
	for _, post := range []string{"post-" + run, "post-" + run + "-b", "post-" + run + "-retry"} {
		if _, err := db.Doc("posts/"+post).Set(context.Background(), map[string]any{"author": "node.mjs"}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("the newcomer's scenario", func(t *testing.T) { newcomersScenario(t, app, dev, env) })

	t.Run("against dev.sh", func(t *testing.T) {
		backend := fmt.Sprintf("backend-%s", run)
		testenv.CreateUserAt(t, dev.AuthHost(), "demo-shardcount", backend)
		out := node(t, app, "node.mjs", recipe(t), append(env, "FUNCTIONS="+strings.TrimPrefix(dev.Functions(), "http://"),
			"ADMIN_TOKEN="+testenv.AdminIDToken("demo-shardcount", backend))...)
		for _, line := range []string{"a post nobody liked reads 0", "liked: heart and count", "unliked: heart and count", "the recipe: received likes", "views, ranking and history", "viewers: one, an estimate; rising ranks", "a live page: a bad key fails alone",
			"a live page: stopped from onRows, its throw to onError", "a live page: deleted, then made again"} {
			if !strings.Contains(out, line) {
				t.Errorf("no %q:\n%s", line, out)
			}
		}
	})

	t.Run("the retry rule", func(t *testing.T) {
		// A stand-in for functions under load (a deployed function's 503, a
		// spent budget's 429), then a call whose answer a gateway lost (the
		// like counted, the client sees 504), then the real ones: the client
		// waits what each says and sends the same call again, and the lost
		// answer's retry is a replay.
		target, _ := url.Parse(dev.Functions())
		pass := httputil.NewSingleHostReverseProxy(target)
		var mu sync.Mutex
		var bodies []string
		stand := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/incrementCounter") || r.Method != http.MethodPost {
				pass.ServeHTTP(w, r)
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			mu.Lock()
			bodies = append(bodies, string(b))
			n := len(bodies)
			mu.Unlock()
			w.Header().Set("Access-Control-Allow-Origin", "*")
			switch n {
			case 1:
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, busy)
			case 2:
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"status":"RESOURCE_EXHAUSTED","message":"spent","details":{"code":"RESOURCE_EXHAUSTED","retry_after_seconds":3}}}`)
			case 3:
				lost := httptest.NewRecorder()
				pass.ServeHTTP(lost, r)
				if lost.Code != http.StatusOK {
					t.Errorf("the call whose answer is lost: %d %s", lost.Code, lost.Body)
				}
				w.WriteHeader(http.StatusGatewayTimeout)
				io.WriteString(w, gatewayTimeout)
			default:
				pass.ServeHTTP(w, r)
			}
		}))
		defer stand.Close()
		out := node(t, app, "node.mjs", recipe(t), append(env, "MODE=retry", "RUN="+run+"-retry", "FUNCTIONS="+strings.TrimPrefix(stand.URL, "http://"))...)
		if !strings.Contains(out, "retried [1000,3000,600], replayed") || !strings.Contains(out, "not retried functions/invalid-argument, with its key") {
			t.Errorf("the client's waits and refusals:\n%s", out)
		}
		mu.Lock()
		defer mu.Unlock()
		// The like's four attempts and the invalid increment's one.
		if len(bodies) != 5 || bodies[0] != bodies[1] || bodies[1] != bodies[2] || bodies[2] != bodies[3] || !strings.Contains(bodies[0], "idempotency_key") {
			t.Errorf("the calls the stand-in saw: %q", bodies)
		}
	})
}

package deploy

import (
	"bytes"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/service"
)

// The Go functions buildpack (GoogleCloudPlatform/buildpacks,
// cmd/go/functions_framework) moves the uploaded source under
// serverless_function_source_code/, reads the package name and imports of
// the Go files at its root, and, when they import functions-framework's
// functions package, generates this main in functions.local/app, runs
// `go mod tidy` and builds it. The deployed function is that binary started
// with FUNCTION_TARGET set to the entry point and PORT to listen on.
var mainTemplate = template.Must(template.New("main").Parse(`// Generated like the Cloud Functions Go buildpack's declarative main.
package main

import (
	"log"
	"net/http"
	"os"

	_ "{{.}}"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

func main() {
	http.HandleFunc("/robots.txt", http.NotFound)
	http.HandleFunc("/favicon.ico", http.NotFound)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if err := funcframework.Start(port); err != nil {
		log.Fatalf("Function failed to start: %v\n", err)
	}
}
`))

const frameworkFunctions = "github.com/GoogleCloudPlatform/functions-framework-go/functions"

// uploaded copies what `gcloud functions deploy --source=.` uploads (the
// tracked files, minus .gcloudignore) into dir.
func uploaded(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	ignore := gcloudIgnore(t)
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if ignore(name) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gcloudIgnore reads the directory and file prefixes of .gcloudignore (the
// only pattern form the project uses).
func gcloudIgnore(t *testing.T) func(string) bool {
	b, err := os.ReadFile(filepath.Join(root, ".gcloudignore"))
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			prefixes = append(prefixes, strings.TrimPrefix(line, "/"))
		}
	}
	return func(name string) bool {
		for _, p := range prefixes {
			if name == strings.TrimSuffix(p, "/") || strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
}

// rootPackage parses every .go file at dir's top, as the buildpack does,
// and returns the one package name and its imports.
func rootPackage(t *testing.T, dir string) (string, map[string]bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	names := map[string]bool{}
	imports := map[string]bool{}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		names[parsed.Name.Name] = true
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports[p] = true
		}
	}
	if len(names) != 1 {
		t.Fatalf("the module root holds %d packages %v: the buildpack fails with \"multiple packages in user code directory\"", len(names), names)
	}
	for name := range names {
		return name, imports
	}
	panic("unreachable")
}

func TestBuildpackBuildsAndServesEveryFunction(t *testing.T) {
	if _, err := testenv.EmulatorHost(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "serverless_function_source_code")
	uploaded(t, src)

	pkg, imports := rootPackage(t, src)
	if pkg == "main" {
		t.Fatal("the module root is package main; the buildpack needs a library package")
	}
	if !imports[frameworkFunctions] {
		t.Fatalf("no file at the module root imports %s: the buildpack would not generate the declarative main", frameworkFunctions)
	}
	// The buildpack imports module/<pkg> instead of the root when such a
	// directory exists.
	if _, err := os.Stat(filepath.Join(src, pkg)); err == nil {
		t.Fatalf("a directory %q at the root would make the buildpack import it instead of the root package", pkg)
	}
	gomod, _ := os.ReadFile(filepath.Join(src, "go.mod"))
	module := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(gomod)
	if module == nil || !strings.Contains(strings.Split(string(module[1]), "/")[0], ".") {
		t.Fatalf("the module path must contain a dot in its first element: %s", module)
	}

	app := filepath.Join(src, "functions.local", "app")
	os.MkdirAll(app, 0o755)
	var main bytes.Buffer
	mainTemplate.Execute(&main, string(module[1]))
	if err := os.WriteFile(filepath.Join(app, "main.go"), main.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", "bin/app", "./functions.local/app"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}

	project := testenv.NewProjectID("bp")
	fs := testenv.Firestore(t, project)

	// Deployed (K_SERVICE set), a function refuses the emulators: it would
	// accept unsigned ID tokens. It says why and exits, so the deploy fails
	// and the previous revision keeps serving.
	refusing := exec.Command(filepath.Join(src, "bin", "app"))
	refusing.Env = append(os.Environ(), "PORT=0", "FUNCTION_TARGET=getCounter", "GOOGLE_CLOUD_PROJECT="+project,
		"K_SERVICE=getCounter", "FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:9", "PAGE_TOKEN_SECRET=0123456789abcdef0123")
	refusing.WaitDelay = time.Second
	timer := time.AfterFunc(20*time.Second, func() { refusing.Process.Kill() })
	out, err := refusing.CombinedOutput()
	timer.Stop()
	if code := refusing.ProcessState.ExitCode(); err == nil || code != 1 ||
		!strings.Contains(string(out), "FIREBASE_AUTH_EMULATOR_HOST: must not be set on a deployed function") {
		t.Fatalf("a deployed function with FIREBASE_AUTH_EMULATOR_HOST: exit code %d (%v), want 1 after saying why; output:\n%s", code, err, out)
	}
	id := fmt.Sprintf("bp-%d", time.Now().UnixNano())
	for _, spec := range service.Catalog {
		base := start(t, filepath.Join(src, "bin", "app"), spec.Name, project)
		var resp *http.Response
		var err error
		switch spec.Name {
		case "createCounter":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":%q,"num_shards":1}`, id)))
		case "incrementCounter":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":%q,"delta":7}`, id)))
		case "getCounter":
			resp, err = http.Get(base + "/?consistency=strong&counter_id=" + id)
		case "getCounters":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_ids":[%q]}`, id)))
		case "reshardCounter":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":%q,"num_shards":1}`, id)))
		case "resetCounter":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":%q,"count":7}`, id)))
		case "deleteCounter":
			if _, cerr := fs.Doc("counters/"+id+"-doomed").Set(context.Background(), map[string]any{"num_shards": 1, "count": 0}); cerr != nil {
				t.Fatal(cerr)
			}
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":"%s-doomed"}`, id)))
		case "updateCounter":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":%q,"ranked":true}`, id)))
		case "listCounters":
			resp, err = http.Get(base + "/?limit=5")
		case "listMembers":
			if _, cerr := fs.Doc("counters/"+id+"-liked").Set(context.Background(), map[string]any{"num_shards": 1, "count": 0, "unique": true}); cerr != nil {
				t.Fatal(cerr)
			}
			resp, err = http.Get(base + "/?counter_id=" + id + "-liked")
		case "topCounters":
			resp, err = http.Get(base + "/?window=all")
		case "eraseMember":
			resp, err = http.Post(base, "application/json", strings.NewReader(`{"uid":"nobody"}`))
		case "rollupCounter":
			snap, serr := fs.Doc("counters/" + id + "/shards/0").Get(context.Background())
			if serr != nil {
				t.Fatal(serr)
			}
			resp, err = http.DefaultClient.Do(testenv.ShardEvent(t, base, project, id, 0, snap.Data()["count"].(int64), snap.UpdateTime))
		case "reconcileCounters":
			resp, err = http.Post(base, "application/json", strings.NewReader(fmt.Sprintf(`{"counter_id":%q}`, id)))
		case "recordInstruments":
			resp, err = http.Post(base, "application/json", strings.NewReader(`{"instruments":[{"symbol":"AAA","price":{"currency":"USD","micros":1},"exchange":"BP","instrumentType":"etf","timestamp":"2019-01-01T00:00:00Z"}]}`))
		case "queryInstruments":
			resp, err = http.Get(base + "/?field=exchange&value=BP")
		default:
			t.Errorf("no request to send to %s: add one to this test", spec.Name)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("%s at /: %s %s", spec.Name, resp.Status, body)
		}
		t.Logf("%s: %s %s", spec.Name, resp.Status, bytes.TrimSpace(body))
		if spec.Name == "rollupCounter" {
			snap, err := fs.Doc("counters/" + id).Get(context.Background())
			if err != nil || snap.Data()["count"].(int64) != 7 {
				t.Errorf("after the event, the roll-up holds %v (err %v), want 7", snap.Data()["count"], err)
			}
		}
	}
}

// start runs the built function as Cloud Run would and returns its URL.
func start(t *testing.T, bin, target, project string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin)
	// Not K_SERVICE: with it a function refuses the emulator settings and
	// exits (TestBuildpackBuildsAndServesEveryFunction checks that).
	cmd.Env = append(os.Environ(), "PORT="+port, "FUNCTION_TARGET="+target,
		"GOOGLE_CLOUD_PROJECT="+project, "AUTH=off", "ROLLUP_CADENCE=100ms", "LOG_LEVEL=warn")
	logs := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", target, logs.String())
		}
	})
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return base
		}
	}
	t.Fatalf("%s did not listen on %s:\n%s", target, port, logs.String())
	return ""
}

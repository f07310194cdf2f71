// Package browser drives the web app (examples/web-app) in headless Chromium with
// chromedp: the real Firebase JS SDK signs in anonymously against the Auth
// emulator, calls the functions through httpsCallable, and listens to the
// roll-up with onSnapshot, on a Firestore emulator of its own that runs the
// project's security rules and delivers roll-up events to this process.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/appcheckdev"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// cadence is ROLLUP_CADENCE of the functions under test.
const cadence = time.Second

var (
	root                                   string
	project, base, emulatorAddr, webOrigin string
	triggerAddr                            string
	web                                    net.Listener
	appCheck                               *appcheckdev.Service
	appCheckURL                            string
)

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	root, _ = filepath.Abs("../..")
	emulatorAddr, triggerAddr = testenv.PrivateEmulatorAddrs()
	var err error
	if web, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	webOrigin = "http://" + web.Addr().String()
	project = testenv.AuthProject() // the project of the SDK's sign-ins
	// App Check enforced, increments consuming limited-use tokens, with the
	// local stand-in for Google's App Check service (which cannot run
	// here) minting the page's tokens.
	if appCheck, err = appcheckdev.New(project); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	appCheck.Register(mux, "")
	appCheckURL = httptest.NewServer(mux).URL
	base = testenv.ServeFunctions(map[string]string{
		"APP_CHECK":               "enforce",
		"APP_CHECK_CONSUME":       "incrementCounter",
		"APP_CHECK_JWKS_URL":      appCheckURL + "/jwks",
		"APP_CHECK_API_URL":       appCheckURL + "/",
		"GOOGLE_CLOUD_PROJECT":    project,
		"FIRESTORE_EMULATOR_HOST": emulatorAddr,
		"AUTH":                    "required",
		// The web app's posts have views and likes, as scripts/dev.sh
		// declares them: counters their first use creates.
		"COUNTER_KINDS":         `{"likes": {"unique": true}, "views": {}}`,
		"CORS_ORIGINS":          webOrigin,
		"ROLLUP_CADENCE":        cadence.String(),
		"GROUP_COMMIT_MAX_WAIT": "2ms",
		"LOG_LEVEL":             "warn",
	})
	os.Exit(m.Run())
}

// chromium finds Debian's Chromium (scripts/test.sh installs it).
func chromium() (string, error) {
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium: install Debian's chromium package (scripts/test.sh does when it can)")
}

// build bundles examples/web-app/app.js with the project's esbuild into dir/dist.
func build(t *testing.T, dir string) {
	t.Helper()
	esbuild := filepath.Join(root, "node_modules", ".bin", "esbuild")
	if _, err := os.Stat(esbuild); err != nil {
		testenv.NeedEmulators(t, fmt.Errorf("node_modules/.bin/esbuild is missing: run npm ci (scripts/test.sh does)"))
	}
	html, err := os.ReadFile(filepath.Join(root, "examples", "web-app", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), html, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(esbuild, filepath.Join(root, "examples", "web-app", "app.js"), "--bundle", "--format=esm",
		"--outfile="+filepath.Join(dir, "dist", "app.js"), "--log-level=warning")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, out)
	}
}

func TestWebApp(t *testing.T) {
	browser, err := chromium()
	if err != nil {
		testenv.NeedEmulators(t, err)
	}
	dir := t.TempDir()
	build(t, dir)
	go http.Serve(web, http.FileServer(http.Dir(dir)))

	// Firestore with the project's rules, its trigger events to this process.
	testenv.StartEmulator(t, emulatorAddr, "--rules="+filepath.Join(root, "firestore.rules"), "--functions_emulator="+triggerAddr)
	testenv.ServeTriggers(t, emulatorAddr, project, triggerAddr, base)
	// Instruments to page through, written as an app's backend would.
	exchange := fmt.Sprintf("WEB%d", time.Now().UnixNano()%1e6)
	seedInstruments(t, exchange, 12)

	authHost, _ := testenv.AuthEmulatorHost()
	page := webOrigin + "/?" + url.Values{
		"project": {project}, "auth": {authHost}, "firestore": {emulatorAddr},
		"functions": {strings.TrimPrefix(base, "http://")},
		"appcheck":  {appCheckURL + "/token"}, "consume": {"incrementCounter"},
	}.Encode()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(900, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()
	defer func() {
		if t.Failed() { // what the page showed when a wait gave up
			state, err := chromedp.Run(ctx, chromedp.Evaluate[string](
				`["status", "total", "likes", "strong-value", "pending", "error", "trending"].map((id) => id + ": " + document.getElementById(id).textContent).join("; ")`))
			t.Logf("the page: %s %v", state, err)
		}
	}()

	post := fmt.Sprintf("web-%d", time.Now().UnixNano())
	views := "views:" + post
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	must(t, "load the page and sign in", chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(css(`body[data-ready="true"]`)),
	))
	status, err := chromedp.Run(ctx, chromedp.Text(css("#status")))
	if err != nil || !strings.Contains(status, "signed in anonymously") {
		t.Fatalf("status %q, %v", status, err)
	}
	// A new post: its views and likes exist nowhere yet, and read 0.
	must(t, "open a post", chromedp.Do(ctx,
		chromedp.SendKeys(css("#post-id"), post),
		chromedp.Click(css("#open")),
		chromedp.WaitEnabled(css("#plus")),
		waitText("#total", "0"),
		waitText("#likes", "0"),
	))

	// +1 view thirty times quickly: 30 callables in flight, the first one
	// creating the counter.
	var presses []chromedp.Action[chromedp.Void]
	for range 30 {
		presses = append(presses, chromedp.Click(css("#plus")))
	}
	pressed := time.Now()
	must(t, "press", chromedp.Do(ctx, presses...))
	// The roll-up's promise starts at the last increment's answer: before
	// it, the presses wait on the browser's six connections and on the
	// user's budget, which the client's retry rule honours.
	must(t, "the callables answered", chromedp.Do(ctx, waitText("#pending", "")))
	answered := time.Now()
	if n := appCheck.Consumed(); n < 30 {
		t.Errorf("%d limited-use App Check tokens consumed for 30 increments: the page reused tokens", n)
	}
	must(t, "the live total shows 30", chromedp.Do(ctx, waitText("#total", "30")))
	live := time.Since(answered)
	t.Logf("the live total showed 30 %s after the last answer", live.Round(time.Millisecond))
	if live > 2*cadence {
		t.Errorf("the live total took %s after the last answer, more than two cadences", live)
	}
	must(t, "strong read", chromedp.Do(ctx, chromedp.Click(css("#strong")), waitText("#strong-value", "30")))
	if errText, _ := chromedp.Run(ctx, chromedp.Text(css("#error"))); errText != "" {
		t.Errorf("the page shows an error: %s", errText)
	}
	// The last hour, minute by minute (getCounter's history), and the most
	// viewed posts of the last 60 minutes (topCounters), both refreshed by
	// the page.
	must(t, "the chart shows the hour's 30", chromedp.Do(ctx,
		waitText("#hour-total", "30"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#chart rect").length === 60`),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#chart rect")].reduce((s, r) => s + Number(r.dataset.count), 0) === 30`),
	))
	must(t, "trending lists the post", chromedp.Do(ctx, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.querySelector('#trending li[data-id=%q]')?.dataset.count === "30"`, views),
		chromedp.WithPollingTimeout(10*cadence))))
	t.Logf("pressed at %s", pressed.Format(time.TimeOnly))

	// The like button: the heart from the user's own member document, one
	// callable to toggle, the count following.
	must(t, "like", chromedp.Do(ctx,
		chromedp.Click(css("#like")),
		chromedp.Poll[chromedp.Void](`document.getElementById("like").dataset.liked === "true"`),
		waitText("#likes", "1"),
	))
	must(t, "unlike", chromedp.Do(ctx,
		chromedp.Click(css("#like")),
		chromedp.Poll[chromedp.Void](`document.getElementById("like").dataset.liked === "false"`),
		waitText("#likes", "0"),
	))
	// Three pages of instruments (5, 5, 2), with no duplicates.
	count := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#instruments tr").length === %d`, n))
	}
	must(t, "page through instruments", chromedp.Do(ctx,
		chromedp.SendKeys(css("#exchange"), exchange),
		chromedp.Click(css("#load")), count(5),
		chromedp.Click(css("#more"), chromedp.NodeEnabled), count(10),
		chromedp.Click(css("#more"), chromedp.NodeEnabled), count(12),
		chromedp.Poll[chromedp.Void](`document.getElementById("more").disabled`),
	))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#instruments tr")].map(r => r.dataset.id)`))
	if err != nil || len(rows) != 12 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("instrument %s listed twice", r)
		}
		seen[r] = true
	}

	// opened waits until the page has opened a post: its status line
	// changes last, and clicks land where they aim once it has.
	opened := func(post string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById("status").textContent.endsWith(%q)`, "post "+post))
	}
	clearError := chromedp.Poll[chromedp.Void](`(document.getElementById("error").textContent = "", true)`)

	// A readable error from the callable: a view of a post whose id cannot
	// name a counter (the listeners may have said so already; cleared
	// first). The client does not retry it.
	must(t, "an error", chromedp.Do(ctx,
		chromedp.SetValue(css("#post-id"), "a b"),
		chromedp.Click(css("#open")),
		opened("a b"),
		clearError,
		chromedp.Click(css("#plus")),
		chromedp.Poll[chromedp.Void](`document.getElementById("error").textContent.startsWith("invalid-argument")`),
	))
	errText, _ := chromedp.Run(ctx, chromedp.Text(css("#error")))
	t.Logf("error shown: %s", errText)

	// The screenshot of the README, back on the post.
	must(t, "back to the post", chromedp.Do(ctx,
		chromedp.SetValue(css("#post-id"), post),
		chromedp.Click(css("#open")),
		opened(post),
		waitText("#total", "30"),
		chromedp.Click(css("#strong")),
		waitText("#strong-value", "30"),
		clearError,
	))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	must(t, "screenshot", err)
	out := filepath.Join(t.TempDir(), "web-app.png")
	if os.Getenv("UPDATE_SCREENSHOT") != "" {
		out = filepath.Join(root, "docs", "web-app.png") // UPDATE_SCREENSHOT=1 go test ./e2e/browser
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitText waits until the element's text is exactly want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).textContent.trim() === %q`, sel, want),
		chromedp.WithPollingInterval(20*time.Millisecond))
}

func seedInstruments(t *testing.T, exchange string, n int) {
	t.Helper()
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf(`{"symbol":"S%d","price":{"currency":"USD","micros":%d},"exchange":%q,"instrumentType":"etf","timestamp":"2019-01-01T00:00:%02dZ"}`,
			i, 1000000+i*10000, exchange, i))
	}
	uid := fmt.Sprintf("seed-%d", time.Now().UnixNano())
	testenv.CreateUser(t, project, uid)
	r := testenv.Do(t, "POST", base+"/recordInstruments", `{"instruments":[`+strings.Join(items, ",")+`]}`,
		"Authorization", "Bearer "+testenv.AdminIDToken(project, uid)) // a backend: no App Check
	if r.Status != http.StatusCreated {
		t.Fatal(r)
	}
}

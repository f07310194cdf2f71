// Package secured runs the functions as deployed (AUTH=required) against the
// Firestore and Auth emulators: Firebase ID tokens, CORS origins and the
// per-user increment limit.
package secured

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/service"
)

const origin = "https://app.example.com"

var (
	base    string
	project string
	logs    *testenv.Logs
)

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "secured:", err)
		os.Exit(1)
	}
	code := m.Run()
	logs.Close()
	os.Exit(code)
}

func setup() error {
	if _, err := testenv.EmulatorHost(); err != nil {
		return err
	}
	if _, err := testenv.AuthEmulatorHost(); err != nil {
		return err
	}
	project = testenv.NewProjectID("sec")
	testenv.Setenv(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "required",
		"CORS_ORIGINS":         origin + ", http://localhost:5173",
		"USER_CREATE":          "on", // the owners' budgets need owners
		"RATE_LIMITS":          limits,
		// Addresses get a user's limits here, so a second user from one
		// address finds its budget spent.
		"ADDRESS_RATE_LIMITS": limits,
		"LOG_LEVEL":           "info",
	})
	var err error
	if logs, err = testenv.CaptureStdout(); err != nil {
		return err
	}
	base, err = testenv.StartFunctions()
	return err
}

// limits are the budgets of users and addresses here; a call costs
// nothing, so each test spends the budget it is about.
const limits = "call=0:1,increment=1:3,create=0.5:8,read=0.5:3,strong=0.5:3,record=1:20,query=0.5:3,reshard=0.5:2,reset=0.5:2,delete=0.5:2,list=0.5:2,history=0.5:2,top=0.5:2"

func url(fn string) string { return base + "/" + fn }

// caller is a user of the Auth emulator, calling from an address of its
// own (budgets count per user and per address).
type caller struct {
	bearer string
	client testenv.Client
}

func (c caller) do(t *testing.T, method, url, body string, headers ...string) testenv.Response {
	t.Helper()
	return c.client.Do(t, method, url, body, append([]string{"Authorization", c.bearer}, headers...)...)
}

var callers atomic.Int32

// user creates a user in the Auth emulator and returns it as a caller
// from a fresh loopback address.
func user(t *testing.T, uid string) caller {
	testenv.CreateUser(t, project, uid)
	n := callers.Add(1)
	return caller{"Bearer " + testenv.ValidIDToken(project, uid), testenv.From(fmt.Sprintf("127.0.%d.%d", 1+n/250, 1+n%250))}
}

func TestEveryPublicFunctionNeedsAValidToken(t *testing.T) {
	t.Parallel()
	bearer := user(t, "alice")
	id := fmt.Sprintf("sec-%d", time.Now().UnixNano())
	// status is the answer to the valid token, when not a success.
	calls := []struct {
		fn, method, query, body string
		status                  int
	}{
		{"createCounter", "POST", "", fmt.Sprintf(`{"counter_id":%q,"num_shards":2}`, id), 0},
		{"incrementCounter", "POST", "", fmt.Sprintf(`{"counter_id":%q}`, id), 0},
		{"getCounter", "GET", "?consistency=strong&counter_id=" + id, "", 0},
		{"getCounters", "POST", "", fmt.Sprintf(`{"counter_ids":[%q]}`, id), 0},
		{"reshardCounter", "POST", "", fmt.Sprintf(`{"counter_id":%q,"num_shards":3}`, id), 0},
		{"resetCounter", "POST", "", fmt.Sprintf(`{"counter_id":%q,"count":5}`, id), 0},
		{"updateCounter", "POST", "", fmt.Sprintf(`{"counter_id":%q,"ranked":true}`, id), http.StatusForbidden}, // admins only
		{"listCounters", "GET", "?limit=5", "", 0},
		{"listMembers", "GET", "?counter_id=" + id, "", http.StatusBadRequest}, // a plain counter has no members
		{"eraseMember", "POST", "", `{"uid":"alice"}`, http.StatusForbidden},   // admins only
		{"topCounters", "GET", "?window=all", "", 0},
		{"deleteCounter", "POST", "", fmt.Sprintf(`{"counter_id":%q}`, id), 0},
		{"recordInstruments", "POST", "", `{"instruments":[{"symbol":"AAA","price":{"currency":"USD","micros":1},"exchange":"E","instrumentType":"etf","timestamp":"2019-01-01T00:00:00Z"}]}`, http.StatusForbidden}, // admins only
		{"queryInstruments", "GET", "?field=exchange&value=E", "", 0},
	}
	public := 0
	for _, spec := range service.Catalog {
		if spec.Kind == service.HTTPTrigger && spec.Access == service.Public {
			public++
		}
	}
	if public != len(calls) {
		t.Fatalf("the catalog has %d public HTTP functions, this test calls %d", public, len(calls))
	}
	now := time.Now()
	testenv.CreateUser(t, project, "bob")
	bad := map[string]string{
		"no header":      "",
		"not bearer":     "Basic YWxpY2U6c2VjcmV0",
		"empty bearer":   "Bearer ",
		"malformed":      "Bearer not.a.jwt",
		"expired":        "Bearer " + testenv.IDToken(project, "bob", now.Add(-2*time.Hour), now.Add(-time.Hour)),
		"issued later":   "Bearer " + testenv.IDToken(project, "bob", now.Add(time.Hour), now.Add(2*time.Hour)),
		"wrong project":  "Bearer " + testenv.ValidIDToken("demo-other-project", "bob"),
		"unknown user":   "Bearer " + testenv.ValidIDToken(project, "nobody"),
		"empty subject":  "Bearer " + testenv.ValidIDToken(project, ""),
		"two parts only": "Bearer a.b",
	}
	for _, c := range calls {
		for name, header := range bad {
			var h []string
			if header != "" {
				h = []string{"Authorization", header}
			}
			r := testenv.Do(t, c.method, url(c.fn)+c.query, c.body, h...)
			if r.Status != http.StatusUnauthorized || r.ErrorCode() != "UNAUTHENTICATED" || r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s with %s: %s", c.fn, name, r)
			}
		}
		r := bearer.do(t, c.method, url(c.fn)+c.query, c.body)
		if r.Status >= 300 && r.Status != c.status {
			t.Errorf("%s with a valid token: %s", c.fn, r)
		}
	}
	// The expired token is told apart, so apps know to refresh it.
	r := testenv.Do(t, "GET", url("getCounter")+"?counter_id="+id, "", "Authorization", bad["expired"])
	if !strings.Contains(string(r.Body), "expired") {
		t.Errorf("expired token: %s", r)
	}

	// Each request's log line names the user.
	lines := logs.Await(map[string]any{"message": "request", "function": "incrementCounter", "user": "alice", "status": float64(200)})
	if len(lines) != 1 {
		t.Errorf("%d log lines for alice's increment, want 1", len(lines))
	}
}

func TestPrivateFunctionsDoNotTakeFirebaseTokens(t *testing.T) {
	t.Parallel()
	// reconcileCounters is invoked by Cloud Scheduler with IAM, not by apps.
	r := testenv.Do(t, "POST", url("reconcileCounters"), `{}`)
	if r.Status != http.StatusOK {
		t.Errorf("reconcileCounters without a token: %s", r)
	}
}

func TestIncrementsAreLimitedPerUser(t *testing.T) {
	t.Parallel()
	carol, dave := user(t, "carol"), user(t, "dave")
	id := fmt.Sprintf("limit-%d", time.Now().UnixNano())
	if r := carol.do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	body := fmt.Sprintf(`{"counter_id":%q}`, id)
	for i := range 3 { // the burst
		if r := carol.do(t, "POST", url("incrementCounter"), body); r.Status != http.StatusOK {
			t.Fatalf("increment %d of the burst: %s", i, r)
		}
	}
	r := carol.do(t, "POST", url("incrementCounter"), body)
	if r.Status != http.StatusTooManyRequests || r.ErrorCode() != "RESOURCE_EXHAUSTED" {
		t.Fatalf("4th increment: %s", r)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	if r := dave.do(t, "POST", url("incrementCounter"), body); r.Status != http.StatusOK {
		t.Errorf("another user is limited too: %s", r)
	}
	var got struct{ Count int64 }
	dave.do(t, "GET", url("getCounter")+"?consistency=strong&counter_id="+id, "").Decode(t, &got)
	if got.Count != 4 {
		t.Errorf("count = %d, want 4 (the refused increment wrote nothing)", got.Count)
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	for _, spec := range service.Catalog {
		if spec.Kind != service.HTTPTrigger || spec.Access != service.Public {
			continue
		}
		fn := spec.Name
		r := testenv.Do(t, "OPTIONS", url(fn), "",
			"Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type, idempotency-key")
		if r.Status != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("%s preflight from %s: %s %v", fn, origin, r, r.Header)
		}
		for _, h := range []string{"Authorization", "Content-Type", "Idempotency-Key"} {
			if !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), h) {
				t.Errorf("%s: Access-Control-Allow-Headers %q lacks %s", fn, r.Header.Get("Access-Control-Allow-Headers"), h)
			}
		}
		if !strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "OPTIONS") {
			t.Errorf("%s: Access-Control-Allow-Methods = %q", fn, r.Header.Get("Access-Control-Allow-Methods"))
		}

		r = testenv.Do(t, "OPTIONS", url(fn), "", "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST")
		if r.Status != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s preflight from another origin: %s", fn, r)
		}
	}
	// A simple request from another origin gets no CORS header, so the
	// browser hides the answer.
	r := testenv.Do(t, "GET", url("getCounter")+"?counter_id=x", "", "Origin", "https://evil.example.com")
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("Access-Control-Allow-Origin sent to another origin")
	}
	r = testenv.Do(t, "GET", url("getCounter")+"?counter_id=x", "", "Origin", "http://localhost:5173")
	if r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("second allowed origin: %v", r.Header)
	}
}

func TestRequestLogLine(t *testing.T) {
	t.Parallel()
	erin := user(t, "erin")
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := erin.do(t, "GET", url("getCounter")+"?counter_id=log-line-404", "",
		"traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	if r.Status != http.StatusNotFound {
		t.Fatal(r)
	}
	lines := logs.Await(map[string]any{
		"message":                      "request",
		"function":                     "getCounter",
		"status":                       float64(404),
		"counter_id":                   "log-line-404",
		"user":                         "erin",
		"severity":                     "INFO",
		"logging.googleapis.com/trace": "projects/" + project + "/traces/" + trace,
	})
	if len(lines) != 1 {
		t.Fatalf("%d matching log lines, want 1", len(lines))
	}
	if _, ok := lines[0]["latency_ms"].(float64); !ok {
		t.Errorf("no latency_ms in %v", lines[0])
	}
	if req, _ := lines[0]["httpRequest"].(map[string]any); req["status"] != float64(404) || req["requestMethod"] != "GET" {
		t.Errorf("httpRequest = %v", lines[0]["httpRequest"])
	}
}

// TestEveryBudgetIsLimited spends each budget of one user (RATE_LIMITS of
// TestMain) and checks the next call is a 429 with Retry-After that wrote
// nothing, while another user (from another address) is not affected.
func TestEveryBudgetIsLimited(t *testing.T) {
	t.Parallel()
	frank, grace := user(t, "frank"), user(t, "grace")
	id := fmt.Sprintf("budgets-%d", time.Now().UnixNano())
	// Grace owns counters of her own, for the budgets of owners.
	for i := range 4 {
		if r := grace.do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":"%s-g-%d"}`, id, i)); r.Status != http.StatusCreated {
			t.Fatal(r)
		}
	}
	instrument := `{"symbol":"AAA","price":{"currency":"USD","micros":1},"exchange":"LIM","instrumentType":"etf","timestamp":"2019-01-01T00:00:00Z"}`
	batch := func(n int) string {
		return `{"instruments":[` + strings.TrimSuffix(strings.Repeat(instrument+",", n), ",") + `]}`
	}
	// Each body is for frank's (f) or grace's (g) i-th call.
	for _, tc := range []struct {
		budget        string
		method, fn, q string
		body          func(who string, i int) string
		burst         int
	}{
		{"create", "POST", "createCounter", "", func(who string, i int) string { return fmt.Sprintf(`{"counter_id":"%s-%s-%d"}`, id, who, 10+i) }, 8},
		{"read", "GET", "getCounter", "?counter_id=" + id + "-g-0", func(string, int) string { return "" }, 3},
		{"strong", "GET", "getCounter", "?consistency=strong&counter_id=" + id + "-g-0", func(string, int) string { return "" }, 3},
		{"query", "GET", "queryInstruments", "?field=exchange&value=LIM", func(string, int) string { return "" }, 3},
		{"reshard", "POST", "reshardCounter", "", func(who string, i int) string {
			return fmt.Sprintf(`{"counter_id":"%s-%s-%d","num_shards":%d}`, id, who, map[string]int{"f": 10, "g": 0}[who], 20+i)
		}, 2},
		{"reset", "POST", "resetCounter", "", func(who string, i int) string {
			return fmt.Sprintf(`{"counter_id":"%s-%s-%d","count":%d}`, id, who, map[string]int{"f": 10, "g": 0}[who], i)
		}, 2},
		{"list", "GET", "listCounters", "", func(string, int) string { return "" }, 2},
		{"history", "GET", "getCounter", "?history=minute&counter_id=" + id + "-g-0", func(string, int) string { return "" }, 2},
		{"top", "GET", "topCounters", "?window=hour", func(string, int) string { return "" }, 2},
		{"delete", "POST", "deleteCounter", "", func(who string, i int) string {
			return fmt.Sprintf(`{"counter_id":"%s-%s-%d"}`, id, who, map[string]int{"f": 11, "g": 1}[who]+i)
		}, 2},
	} {
		for i := range tc.burst {
			if r := frank.do(t, tc.method, url(tc.fn)+tc.q, tc.body("f", i)); r.Status >= 300 {
				t.Fatalf("%s: call %d of the burst: %s", tc.budget, i, r)
			}
		}
		r := frank.do(t, tc.method, url(tc.fn)+tc.q, tc.body("f", tc.burst))
		if r.Status != http.StatusTooManyRequests || r.ErrorCode() != "RESOURCE_EXHAUSTED" || !strings.Contains(string(r.Body), tc.budget) {
			t.Errorf("%s: call %d after the burst: %s", tc.budget, tc.burst+1, r)
		}
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 {
			t.Errorf("%s: Retry-After = %q", tc.budget, r.Header.Get("Retry-After"))
		}
		if r := grace.do(t, tc.method, url(tc.fn)+tc.q, tc.body("g", 0)); r.Status >= 300 {
			t.Errorf("%s: another user is limited too: %s", tc.budget, r)
		}
	}
	// The refused create wrote nothing.
	if r := grace.do(t, "GET", url("getCounter")+fmt.Sprintf("?counter_id=%s-f-18", id), ""); r.Status != http.StatusNotFound {
		t.Errorf("the refused create created the counter: %s", r)
	}
	// Prices are the backend's: a user's batch is refused before it is
	// looked at (a budget's all-or-nothing: internal/ratelimit).
	if r := grace.do(t, "POST", url("recordInstruments"), batch(21)); r.Status != http.StatusForbidden {
		t.Errorf("a user's 21 instruments: %s, want 403", r)
	}
}

// TestNewUsersFromOneAddressShareItsBudget: a fresh anonymous sign-in
// brings no fresh budget; the address's is spent too.
func TestNewUsersFromOneAddressShareItsBudget(t *testing.T) {
	t.Parallel()
	owner := user(t, "budget-owner")
	id := fmt.Sprintf("shared-%d", time.Now().UnixNano())
	if r := owner.do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	from := testenv.From("127.0.200.1")
	var tokens []string
	for i := range 6 {
		uid := fmt.Sprintf("anon-%s-%d", id, i)
		testenv.CreateUser(t, project, uid)
		tokens = append(tokens, testenv.AnonymousIDToken(project, uid))
	}
	// The six at once; the address's budget refills a token a second
	// (increment=1:3) while they run, however slow the machine is.
	statuses := make([]int, len(tokens))
	start := time.Now()
	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Go(func() {
			statuses[i] = from.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Authorization", "Bearer "+token).Status
		})
	}
	wg.Wait()
	refilled := int(time.Since(start) / time.Second)
	ok := 0
	for i, status := range statuses {
		switch status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("anonymous user %d: %d", i, status)
		}
	}
	if ok < 3 || ok > 3+refilled {
		t.Errorf("6 new anonymous users from one address got %d increments in %s, want the address's burst: 3 (and %d refilled)", ok, time.Since(start), refilled)
	}
}

// TestIdempotencyKeysArePerUser: the same key from two users is two keys.
// Before, user B's increment with A's key was dropped as a replay, or its
// 409 told B the delta A had sent.
func TestIdempotencyKeysArePerUser(t *testing.T) {
	t.Parallel()
	alice, bob := user(t, "ida"), user(t, "ben")
	id := fmt.Sprintf("keys-%d", time.Now().UnixNano())
	if r := alice.do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	inc := func(who caller) testenv.Response {
		return who.do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Idempotency-Key", "shared-key")
	}
	if r := inc(alice); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("alice: %s", r)
	}
	r := inc(bob)
	var answer struct{ Replayed bool }
	r.Decode(t, &answer)
	if r.Status != http.StatusOK || answer.Replayed {
		t.Errorf("bob with alice's key: %s, want his own increment applied", r)
	}
	if r := inc(alice); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("alice again: %s, want a replay", r)
	}
	var got struct{ Count int64 }
	bob.do(t, "GET", url("getCounter")+"?consistency=strong&counter_id="+id, "").Decode(t, &got)
	if got.Count != 2 {
		t.Errorf("count = %d, want 2: one increment each", got.Count)
	}
}

// TestRefusedAttemptsSpendTheBudget: a user who may not reshard someone
// else's counter is told so (403) only as often as the reshard budget
// allows; after that each attempt is a 429 that reads nothing, so refused
// attempts cannot cost reads beyond the budget.
func TestRefusedAttemptsSpendTheBudget(t *testing.T) {
	t.Parallel()
	owner, mallory := user(t, "refused-owner"), user(t, "refused-mallory")
	id := fmt.Sprintf("refused-%d", time.Now().UnixNano())
	if r := owner.do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	body := fmt.Sprintf(`{"counter_id":%q,"num_shards":1}`, id)
	var got []int
	for range 3 {
		got = append(got, mallory.do(t, "POST", url("reshardCounter"), body).Status)
	}
	if want := []int{http.StatusForbidden, http.StatusForbidden, http.StatusTooManyRequests}; !slices.Equal(got, want) {
		t.Errorf("three refused reshards with a burst of 2: %v, want %v", got, want)
	}
}

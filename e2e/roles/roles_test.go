// Package roles checks who may do what (README "Who may do what") with
// AUTH=required and real users of the Auth emulator: a user of anonymous
// sign-in, a signed-in user, the counter's owner, and an admin whose
// custom claim admin: true was set with the Admin SDK's
// SetCustomUserClaims, each signing in for a real ID token; in both
// protocols, plain JSON and callable.
package roles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

var base, project, run string

const unlimited = "call=0:1,create=0:1,increment=0:1,read=0:1,strong=0:1,reshard=0:1,reset=0:1,delete=0:1,list=0:1,top=0:1"

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	project = testenv.AuthProject() // real sign-ins get tokens of this project
	run = fmt.Sprint(time.Now().UnixNano())
	base = testenv.ServeFunctions(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "required",
		// USER_CREATE=on: this is the table of counters users own.
		"USER_CREATE": "on",
		// Budgets are secured's test; here every call must reach its check.
		"RATE_LIMITS":         unlimited,
		"ADDRESS_RATE_LIMITS": unlimited,
		"LOG_LEVEL":           "warn",
	})
	os.Exit(m.Run())
}

// who is a signed-in user: its uid and ID token, from the Auth emulator.
type who struct {
	name, uid, token string
}

// signUp creates a user in the Auth emulator (an anonymous one without an
// email) and signs it in.
func signUp(t *testing.T, name string, anonymous bool) who {
	t.Helper()
	body := map[string]any{"returnSecureToken": true}
	if !anonymous {
		body["email"], body["password"] = fmt.Sprintf("%s-%s@example.com", name, run), "secret-password"
	}
	var resp struct{ LocalID, IDToken string }
	authREST(t, "accounts:signUp", body, &resp)
	return who{name: name, uid: resp.LocalID, token: resp.IDToken}
}

// signIn signs a user of signUp in again, for a token with its claims now.
func signIn(t *testing.T, w who) who {
	t.Helper()
	var resp struct{ LocalID, IDToken string }
	authREST(t, "accounts:signInWithPassword", map[string]any{
		"email": fmt.Sprintf("%s-%s@example.com", w.name, run), "password": "secret-password", "returnSecureToken": true}, &resp)
	w.token = resp.IDToken
	return w
}

func authREST(t *testing.T, method string, body, out any) {
	t.Helper()
	host, _ := testenv.AuthEmulatorHost()
	b, _ := json.Marshal(body)
	resp, err := http.Post("http://"+host+"/identitytoolkit.googleapis.com/v1/"+method+"?key=any", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", method, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// makeAdmin sets the custom claim admin: true with the Admin SDK, as a
// project's backend would, and signs the user in again for a token that
// carries it.
func makeAdmin(t *testing.T, w who) who {
	t.Helper()
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: project})
	if err != nil {
		t.Fatal(err)
	}
	client, err := app.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := client.SetCustomUserClaims(context.Background(), w.uid, map[string]any{"admin": true}); err != nil {
		t.Fatal(err)
	}
	return signIn(t, w)
}

// protocol sends one call of a function in one protocol and returns the
// status and error code.
type protocol struct {
	name string
	call func(t *testing.T, w who, fn, method string, params map[string]any) (int, string, []byte)
}

var protocols = []protocol{
	{"plain", func(t *testing.T, w who, fn, method string, params map[string]any) (int, string, []byte) {
		var r testenv.Response
		if method == http.MethodGet {
			q := url.Values{}
			for k, v := range params {
				q.Set(k, fmt.Sprint(v))
			}
			r = testenv.Do(t, "GET", base+"/"+fn+"?"+q.Encode(), "", "Authorization", "Bearer "+w.token)
		} else {
			b, _ := json.Marshal(params)
			r = testenv.Do(t, "POST", base+"/"+fn, string(b), "Authorization", "Bearer "+w.token)
		}
		return r.Status, r.ErrorCode(), r.Body
	}},
	{"callable", func(t *testing.T, w who, fn, _ string, params map[string]any) (int, string, []byte) {
		b, _ := json.Marshal(map[string]any{"data": params})
		r := testenv.Do(t, "POST", base+"/"+fn, string(b), "Authorization", "Bearer "+w.token)
		var e struct {
			Error struct{ Status string }
		}
		json.Unmarshal(r.Body, &e)
		if r.Status == http.StatusOK && fn == "createCounter" {
			return http.StatusCreated, "", r.Body // a callable success is 200, the plain create's 201
		}
		return r.Status, e.Error.Status, r.Body
	}},
}

const (
	allow   = http.StatusOK
	created = http.StatusCreated
	deny    = http.StatusForbidden
)

// TestWhoMayDoWhat is the table of the README, end to end: each role, in
// each protocol, on a counter of the owner's.
func TestWhoMayDoWhat(t *testing.T) {
	anonymous := signUp(t, "anon", true)
	user := signUp(t, "user", false)
	owner := signUp(t, "owner", false)
	admin := makeAdmin(t, signUp(t, "admin", false))
	roles := []who{anonymous, user, owner, admin}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			n := 0
			fresh := func() string { // a new counter of owner's
				n++
				id := fmt.Sprintf("roles-%s-%s-%d", run, p.name, n)
				if status, _, body := p.call(t, owner, "createCounter", "POST", map[string]any{"counter_id": id, "num_shards": 4}); status != created {
					t.Fatalf("owner creates: %d %s", status, body)
				}
				return id
			}
			for i, w := range roles {
				expect := func(what string, want [4]int, status int, code string, body []byte) {
					t.Helper()
					if status != want[i] || want[i] == deny && code != "PERMISSION_DENIED" {
						t.Errorf("%s, as %s: %d %s, want %d", what, w.name, status, body, want[i])
					}
				}
				id := fresh()
				for _, c := range []struct {
					what   string
					fn     string
					params map[string]any
					want   [4]int // anonymous, user, owner, admin
				}{
					{"+1", "incrementCounter", map[string]any{"counter_id": id}, [4]int{allow, allow, allow, allow}},
					{"decrement", "incrementCounter", map[string]any{"counter_id": id, "action_type": "decrement"}, [4]int{allow, allow, allow, allow}},
					{"delta 5", "incrementCounter", map[string]any{"counter_id": id, "delta": 5}, [4]int{deny, deny, allow, allow}},
					{"delta -10^9", "incrementCounter", map[string]any{"counter_id": id, "delta": -1_000_000_000}, [4]int{deny, deny, allow, allow}},
					{"reshard", "reshardCounter", map[string]any{"counter_id": id, "num_shards": 8}, [4]int{deny, deny, allow, allow}},
					{"reset", "resetCounter", map[string]any{"counter_id": id, "count": 3}, [4]int{deny, deny, allow, allow}},
					{"delete", "deleteCounter", map[string]any{"counter_id": id}, [4]int{deny, deny, allow, allow}},
				} {
					status, code, body := p.call(t, w, c.fn, "POST", c.params)
					expect(c.what, c.want, status, code, body)
				}
				// In a list of increments, every item is judged alone.
				id = fresh()
				status, _, body := p.call(t, w, "incrementCounter", "POST", map[string]any{"increments": []any{
					map[string]any{"counter_id": id, "delta": 1_000_000_000}, map[string]any{"counter_id": id}}})
				wantFirst := [4]int{deny, deny, allow, allow}[i]
				if status != http.StatusOK || !bytes.Contains(body, []byte(fmt.Sprintf(`{"status":%d`, wantFirst))) || !bytes.Contains(body, []byte(`"delta":1,`)) {
					t.Errorf("increments of 10^9 and 1, as %s: %d %s", w.name, status, body)
				}

				// Creating: anonymous users may not; users up to USER_MAX_SHARDS
				// (the heuristic's choice capped too); admins up to 1000.
				mine := fmt.Sprintf("roles-%s-%s-%s", run, p.name, w.name)
				status, code, body := p.call(t, w, "createCounter", "POST", map[string]any{"counter_id": mine + "-big", "num_shards": 500})
				if want := [4]int{deny, deny, deny, created}[i]; status != want {
					t.Errorf("500 shards, as %s: %d %s %s", w.name, status, code, body)
				}
				status, _, body = p.call(t, w, "createCounter", "POST", map[string]any{"counter_id": mine, "followers_count": 10_000_000})
				wantShards := [4]int{0, 100, 100, 1000}[i]
				if want := [4]int{deny, created, created, created}[i]; status != want || status == created && !bytes.Contains(body, []byte(fmt.Sprintf(`"num_shards":%d`, wantShards))) {
					t.Errorf("10^7 followers, as %s: %d %s, want %d with %d shards", w.name, status, body, want, wantShards)
				}
			}
		})
	}
}

// TestListCountersIsOwnUnlessAdmin: a caller lists their own counters; an
// admin lists anyone's, or all.
func TestListCountersIsOwnUnlessAdmin(t *testing.T) {
	alice, bob := signUp(t, "alice", false), signUp(t, "bob", false)
	admin := makeAdmin(t, signUp(t, "boss", false))
	for _, w := range []who{alice, bob} {
		for i := range 2 {
			id := fmt.Sprintf("list-%s-%s-%d", run, w.name, i)
			if status, _, body := protocols[0].call(t, w, "createCounter", "POST", map[string]any{"counter_id": id}); status != created {
				t.Fatalf("%d %s", status, body)
			}
		}
	}
	ids := func(body []byte) []string {
		var list struct {
			Counters []struct {
				CounterID string `json:"counter_id"`
				Owner     string
			}
			Result *struct {
				Counters []struct {
					CounterID string `json:"counter_id"`
				}
			}
		}
		json.Unmarshal(body, &list)
		var out []string
		for _, c := range list.Counters {
			out = append(out, c.CounterID)
		}
		if list.Result != nil {
			for _, c := range list.Result.Counters {
				out = append(out, c.CounterID)
			}
		}
		return out
	}
	for _, p := range protocols {
		status, _, body := p.call(t, alice, "listCounters", "GET", map[string]any{"limit": 100})
		if got := ids(body); status != allow || fmt.Sprint(got) != fmt.Sprintf("[list-%s-alice-0 list-%s-alice-1]", run, run) {
			t.Errorf("%s: alice lists %d %v", p.name, status, got)
		}
		if status, code, body := p.call(t, alice, "listCounters", "GET", map[string]any{"owner": bob.uid}); status != deny {
			t.Errorf("%s: alice lists bob's: %d %s %s", p.name, status, code, body)
		}
		status, _, body = p.call(t, admin, "listCounters", "GET", map[string]any{"owner": bob.uid})
		if got := ids(body); status != allow || fmt.Sprint(got) != fmt.Sprintf("[list-%s-bob-0 list-%s-bob-1]", run, run) {
			t.Errorf("%s: the admin lists bob's: %d %v", p.name, status, got)
		}
		status, _, body = p.call(t, admin, "listCounters", "GET", map[string]any{"limit": 100})
		if got := ids(body); status != allow || len(got) < 4 {
			t.Errorf("%s: the admin lists all: %d %v", p.name, status, got)
		}
	}
}

// TestTheAttackRun replays the attack steps of the review that asked for
// roles; each now gets a 403 or a 404.
func TestTheAttackRun(t *testing.T) {
	victim, mallory := signUp(t, "victim", false), signUp(t, "mallory", false)
	anon := signUp(t, "anon-attacker", true)
	plain := protocols[0]
	id := "post-" + run
	if status, _, body := plain.call(t, victim, "createCounter", "POST", map[string]any{"counter_id": id, "num_shards": 50}); status != created {
		t.Fatalf("%d %s", status, body)
	}
	for _, c := range []struct {
		what    string
		w       who
		fn      string
		params  map[string]any
		want    int
		mention string
	}{
		{"an anonymous +10^9 on another's counter", anon, "incrementCounter", map[string]any{"counter_id": id, "delta": 1_000_000_000}, deny, "delta"},
		{"an anonymous user squatting ids", anon, "createCounter", map[string]any{"counter_id": "post-squat-" + run, "num_shards": 1000}, deny, "anonymous"},
		{"a user shrinking another's hot counter", mallory, "reshardCounter", map[string]any{"counter_id": id, "num_shards": 1}, deny, "owner"},
		{"a user resetting another's counter", mallory, "resetCounter", map[string]any{"counter_id": id}, deny, "owner"},
		{"a user deleting another's counter", mallory, "deleteCounter", map[string]any{"counter_id": id}, deny, "owner"},
		{"a user creating 1000 shards", mallory, "createCounter", map[string]any{"counter_id": "huge-" + run, "num_shards": 1000}, deny, "num_shards"},
		{"a user resharding a counter that does not exist", mallory, "reshardCounter", map[string]any{"counter_id": "nope-" + run, "num_shards": 2}, http.StatusNotFound, "nope"},
	} {
		status, _, body := plain.call(t, c.w, c.fn, "POST", c.params)
		if status != c.want || !strings.Contains(string(body), c.mention) {
			t.Errorf("%s: %d %s, want %d mentioning %q", c.what, status, body, c.want, c.mention)
		}
	}
	// 19 × −10^9 in one request: each item refused alone.
	var items []any
	for range 19 {
		items = append(items, map[string]any{"counter_id": id, "delta": -1_000_000_000})
	}
	_, _, body := plain.call(t, anon, "incrementCounter", "POST", map[string]any{"increments": items})
	if n := strings.Count(string(body), `"status":403`); n != 19 {
		t.Errorf("19 × −10^9 by an anonymous user: %d refused, want 19: %s", n, body)
	}
	status, _, body := plain.call(t, victim, "getCounter", "GET", map[string]any{"counter_id": id, "consistency": "strong"})
	if status != allow || !strings.Contains(string(body), `"count":0`) {
		t.Errorf("the victim's counter: %d %s, want 0", status, body)
	}
}

// TestUserCountersStayWithinTheirLimits: USER_MAX_SHARDS holds when the
// owner reshards (it held at creation only: 10 shards, then 1,000), and
// a counter an end user made is not ranked until an admin says so, however
// much its owner adds to it (mallory's buy-cheap-followers, +10⁹).
func TestUserCountersStayWithinTheirLimits(t *testing.T) {
	mallory := signUp(t, "mallory-limits", false)
	admin := makeAdmin(t, signUp(t, "admin-limits", false))
	plain := protocols[0]
	id := "buy-cheap-followers-" + run
	if status, _, body := plain.call(t, mallory, "createCounter", "POST", map[string]any{"counter_id": id, "num_shards": 10}); status != created {
		t.Fatalf("%d %s", status, body)
	}
	if status, _, body := plain.call(t, mallory, "reshardCounter", "POST", map[string]any{"counter_id": id, "num_shards": 1000}); status != deny || !strings.Contains(string(body), "USER_MAX_SHARDS") {
		t.Errorf("the owner reshards to 1,000: %d %s", status, body)
	}
	if status, _, body := plain.call(t, mallory, "reshardCounter", "POST", map[string]any{"counter_id": id, "num_shards": 100}); status != allow {
		t.Errorf("the owner reshards to USER_MAX_SHARDS: %d %s", status, body)
	}
	if status, _, body := plain.call(t, admin, "reshardCounter", "POST", map[string]any{"counter_id": id, "num_shards": 1000}); status != allow {
		t.Errorf("an admin reshards it to 1,000: %d %s", status, body)
	}
	if status, _, body := plain.call(t, mallory, "createCounter", "POST", map[string]any{"counter_id": id + "-r", "ranked": true}); status != deny {
		t.Errorf("an end user asks for a ranked counter: %d %s", status, body)
	}
	// No kind is declared here: "shares:post-1" is what an app may declare
	// later, and no end user takes it before.
	if status, _, body := plain.call(t, mallory, "createCounter", "POST", map[string]any{"counter_id": "shares:post-" + run}); status != deny || !strings.Contains(string(body), "KIND:KEY") {
		t.Errorf("an end user creates an id of a kind to come: %d %s", status, body)
	}
	if status, _, body := plain.call(t, mallory, "incrementCounter", "POST", map[string]any{"counter_id": id, "delta": 1_000_000_000}); status != allow {
		t.Fatalf("the owner adds 10⁹: %d %s", status, body)
	}
	ranked := func() bool {
		_, _, body := plain.call(t, mallory, "topCounters", "GET", map[string]any{"window": "all", "limit": 100})
		return strings.Contains(string(body), id)
	}
	// The roll-up is not running here; reconcile writes the total.
	testenv.Do(t, "POST", base+"/reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, id))
	if ranked() {
		t.Errorf("an end user's counter is ranked")
	}
	if status, _, body := plain.call(t, mallory, "updateCounter", "POST", map[string]any{"counter_id": id, "ranked": true}); status != deny {
		t.Errorf("the owner ranks it: %d %s", status, body)
	}
	if status, _, body := plain.call(t, admin, "updateCounter", "POST", map[string]any{"counter_id": id, "ranked": true}); status != allow {
		t.Fatalf("the admin ranks it: %d %s", status, body)
	}
	if !ranked() {
		t.Errorf("a counter the admin ranked is not in the ranking")
	}
}

// TestBackendExamples runs the backend examples of docs/guides/backend.md,
// in Go and in Node, against these functions and the Auth emulator: a
// service identity whose custom token carries admin: true creates a
// counter of 1,000 shards and adds 250 at once, which only an admin may.
func TestBackendExamples(t *testing.T) {
	authHost, _ := testenv.AuthEmulatorHost()
	env := append(os.Environ(), "FUNCTIONS_URL="+base, "FIREBASE_API_KEY=demo-api-key",
		"GOOGLE_CLOUD_PROJECT="+project, "FIREBASE_AUTH_EMULATOR_HOST="+authHost)
	for _, cmd := range []*exec.Cmd{
		exec.Command("go", "run", "./examples/backend"),
		exec.Command("node", "examples/backend/backend.mjs"),
	} {
		cmd.Dir, cmd.Env = "../..", env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "with 1000 shards, added 250") {
			t.Errorf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
}

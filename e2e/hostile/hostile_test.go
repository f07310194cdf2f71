// Package hostile tries the functions as an attacker from the internet
// would, against scripts/dev.sh with AUTH=required as deployed (end users
// do not create counters, App Check enforced, a proxy in front): every
// attack step gets a fast 4xx, a 403 or a 429, and no request makes a
// Firestore read its caller's budget did not pay for.
package hostile

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// budgets are small, so a test spends them quickly; addresses get more,
// as deployed.
const (
	userBudgets    = "call=5:100,increment=0.01:5,read=0.01:5,strong=0.01:3,history=0.01:2,top=0.01:2,list=0.01:2,create=0.01:3,reshard=0.01:2,reset=0.01:2,delete=0.01:2"
	addressBudgets = "call=50:1000,increment=10:100,read=0.01:12,strong=10:30,history=10:20,top=10:20,list=10:20,create=10:30,reshard=10:20,reset=10:20,delete=10:20"
)

// site is scripts/dev.sh as the attacker meets it.
type site struct {
	t       *testing.T
	dev     *testenv.Dev
	project string
}

func start(t *testing.T) *site {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dev := testenv.StartDev(t, root, "AUTH=required", "USER_CREATE=off", "ANONYMOUS_CREATE=off",
		"APP_CHECK=enforce", "APP_CHECK_CONSUME=incrementCounter", "TRUSTED_PROXIES=1",
		"RATE_LIMITS="+userBudgets, "ADDRESS_RATE_LIMITS="+addressBudgets,
		`COUNTER_KINDS={"likes": {"unique": true}, "views": {}, "hearts": {"unique": true, "keys_in": "posts"}, "reactions": {"choices": ["love", "wow"]}}`)
	return &site{t: t, dev: dev, project: testenv.AuthProject()}
}

// call sends a request from client address addr (the hop before the
// trusted proxy) with the given headers, a fresh App Check token unless
// one is given.
func (s *site) call(method, fn, body, addr string, headers ...string) testenv.Response {
	s.t.Helper()
	h := append([]string{"X-Forwarded-For", addr}, headers...)
	if !has(headers, "X-Firebase-AppCheck") {
		h = append(h, "X-Firebase-AppCheck", s.appToken())
	}
	return testenv.Do(s.t, method, s.dev.Functions()+"/"+fn, body, h...)
}

func has(headers []string, name string) bool {
	for i := 0; i < len(headers); i += 2 {
		if headers[i] == name {
			return true
		}
	}
	return false
}

// appToken is a fresh App Check token from dev.sh's stand-in for Google's
// service.
func (s *site) appToken() string {
	s.t.Helper()
	r := testenv.Do(s.t, "GET", s.dev.Functions()+"/debug/appcheck/token", "")
	var tok struct{ Token string }
	r.Decode(s.t, &tok)
	if tok.Token == "" {
		s.t.Fatalf("no App Check token: %s", r)
	}
	return tok.Token
}

// user signs a user up in dev.sh's Auth emulator.
func (s *site) user(uid string, anonymous bool) string {
	s.t.Helper()
	testenv.CreateUserAt(s.t, s.dev.AuthHost(), s.project, uid)
	if anonymous {
		return "Bearer " + testenv.AnonymousIDToken(s.project, uid)
	}
	return "Bearer " + testenv.ValidIDToken(s.project, uid)
}

func (s *site) admin() string {
	s.t.Helper()
	testenv.CreateUserAt(s.t, s.dev.AuthHost(), s.project, "backend")
	return "Bearer " + testenv.AdminIDToken(s.project, "backend")
}

// stats are what dev.sh's functions counted.
type stats struct {
	Firestore       map[string]struct{ Reads, Aggregations int64 } `json:"firestore"`
	UnbudgetedReads int64                                          `json:"unbudgeted_reads"`
	AppCheck        map[string]int64                               `json:"app_check"`
	RSS             int64                                          `json:"rss_bytes"`
}

func (s *site) stats() stats {
	s.t.Helper()
	var st stats
	testenv.Do(s.t, "GET", s.dev.Functions()+"/debug/shardcount", "").Decode(s.t, &st)
	return st
}

// rss is the functions' resident memory.
func (s *site) rss() int64 { return s.stats().RSS }

// reads are the documents and aggregations read for requests (the roll-up
// and reconcile read on their own).
func (st stats) reads() int64 {
	var n int64
	for label, o := range st.Firestore {
		if label != "rollup" && label != "reconcile" {
			n += o.Reads + o.Aggregations
		}
	}
	return n
}

func TestAttacker(t *testing.T) {
	s := start(t)
	admin := s.admin()
	created := func(id string, extra string) {
		t.Helper()
		r := s.call("POST", "createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":4%s}`, id, extra), "198.51.100.1", "Authorization", admin)
		if r.Status != http.StatusCreated {
			t.Fatalf("the backend creates %s: %s", id, r)
		}
	}
	created("post-1", "")

	t.Run("huge exponents before a token: a fast 401", func(t *testing.T) {
		s.t = t
		for _, n := range []int{100, 7000} { // about 1 KiB, and 64 KiB
			body := `{"data":{"counter_id":"post-1","delta":[` + strings.TrimSuffix(strings.Repeat("1e999999,", n), ",") + `]}}`
			start := time.Now()
			r := s.call("POST", "incrementCounter", body, "203.0.113.10")
			if r.Status != http.StatusUnauthorized || time.Since(start) > 2*time.Second {
				t.Errorf("%d bytes of huge exponents without a token: %d after %s", len(body), r.Status, time.Since(start))
			}
		}
		// With a token and a budget, the body is parsed, cheaply.
		mallory := s.user("mallory-exp", false)
		body := `{"data":{"counter_id":"post-1","delta":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 7000), ",") + `]}}`
		start := time.Now()
		if r := s.call("POST", "incrementCounter", body, "203.0.113.11", "Authorization", mallory); r.Status != http.StatusBadRequest || time.Since(start) > 2*time.Second {
			t.Errorf("64 KiB of huge exponents with a token: %d after %s", r.Status, time.Since(start))
		}
	})

	t.Run("increments of missing counters spend the budget", func(t *testing.T) {
		s.t = t
		eve := s.user("eve-missing", false)
		before := s.stats().reads()
		statuses := map[int]int{}
		for i := range 8 {
			r := s.call("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"missing-%d"}`, i), "203.0.113.20", "Authorization", eve)
			statuses[r.Status]++
		}
		if statuses[http.StatusNotFound] != 5 || statuses[http.StatusTooManyRequests] != 3 {
			t.Errorf("8 increments of missing counters with a burst of 5: %v, want 5 404s then 429s", statuses)
		}
		items := make([]string, 500)
		for i := range items {
			items[i] = fmt.Sprintf(`{"counter_id":"missing-batch-%d"}`, i)
		}
		r := s.call("POST", "incrementCounter", `{"increments":[`+strings.Join(items, ",")+`]}`, "203.0.113.20", "Authorization", eve)
		var list struct{ Results []struct{ Status int } }
		r.Decode(t, &list)
		for i, res := range list.Results {
			// The call's limited-use App Check token pays for its first
			// item (APP_CHECK_CONSUME): the others are 403 before any budget.
			if want := map[bool]int{true: http.StatusTooManyRequests, false: http.StatusForbidden}[i == 0]; res.Status != want {
				t.Fatalf("item %d of 500 missing ids after the budget: %d, want %d", i, res.Status, want)
			}
		}
		if reads := s.stats().reads() - before; reads != 5 {
			t.Errorf("%d reads for 5 budgeted increments and 503 refused ones, want 5", reads)
		}
	})

	t.Run("every path reads nothing once the budget is spent", func(t *testing.T) {
		s.t = t
		zed := s.user("zed-spent", false)
		paths := []struct{ method, fn, q, body string }{
			{"POST", "incrementCounter", "", `{"counter_id":"post-1"}`},
			{"GET", "getCounter", "?counter_id=post-1", ""},
			{"GET", "getCounter", "?counter_id=post-1&consistency=strong", ""},
			{"GET", "getCounter", "?counter_id=post-1&history=minute", ""},
			{"GET", "topCounters", "?window=hour", ""},
			{"GET", "listCounters", "", ""},
			{"POST", "reshardCounter", "", `{"counter_id":"post-1","num_shards":2}`},
			{"POST", "resetCounter", "", `{"counter_id":"post-1"}`},
			{"POST", "deleteCounter", "", `{"counter_id":"post-1"}`},
		}
		for _, p := range paths { // spend each budget
			for range 6 {
				s.call(p.method, p.fn+p.q, p.body, "203.0.113.30", "Authorization", zed)
			}
		}
		before := s.stats().reads()
		for _, p := range paths {
			for range 3 {
				if r := s.call(p.method, p.fn+p.q, p.body, "203.0.113.30", "Authorization", zed); r.Status != http.StatusTooManyRequests {
					t.Errorf("%s%s after its budget: %s", p.fn, p.q, r)
				}
			}
		}
		if reads := s.stats().reads() - before; reads != 0 {
			t.Errorf("%d reads by requests whose budget was spent, want 0", reads)
		}
	})

	t.Run("a long history spends a token per 100 buckets", func(t *testing.T) {
		// One token used to pay for up to 1,000 bucket reads.
		s.t = t
		hal := s.user("hal-history", false)
		from := time.Now().UTC().Add(-149 * time.Minute).Format(time.RFC3339)
		q := "?counter_id=post-1&history=minute&from=" + from // 150 buckets: 2 tokens, the burst
		if r := s.call("GET", "getCounter"+q, "", "203.0.113.35", "Authorization", hal); r.Status != http.StatusOK {
			t.Fatalf("150 minutes of history: %s", r)
		}
		if r := s.call("GET", "getCounter?counter_id=post-1&history=minute", "", "203.0.113.35", "Authorization", hal); r.Status != http.StatusTooManyRequests {
			t.Errorf("another history read after 150 buckets with a burst of 2: %s, want 429", r)
		}
		// More than the burst can ever pay for is no wait but a 400.
		from = time.Now().UTC().Add(-299 * time.Minute).Format(time.RFC3339)
		if r := s.call("GET", "getCounter?counter_id=post-1&history=minute&from="+from, "", "203.0.113.36", "Authorization", s.user("hal-wide", false)); r.Status != http.StatusBadRequest {
			t.Errorf("300 buckets with a burst of 2 tokens: %s, want 400", r)
		}
	})

	t.Run("mallory takes no id and no trending slot", func(t *testing.T) {
		s.t = t
		mallory := s.user("mallory", false)
		for _, id := range []string{"buy-cheap-followers", "post-2-likes"} {
			if r := s.call("POST", "createCounter", fmt.Sprintf(`{"counter_id":%q}`, id), "203.0.113.40", "Authorization", mallory); r.Status != http.StatusForbidden {
				t.Errorf("mallory creates %s: %s", id, r)
			}
		}
		if r := s.call("POST", "incrementCounter", `{"counter_id":"post-1","delta":1000000000}`, "203.0.113.40", "Authorization", mallory); r.Status != http.StatusForbidden {
			t.Errorf("mallory adds 10⁹: %s", r)
		}
		if r := s.call("POST", "updateCounter", `{"counter_id":"post-1","ranked":false}`, "203.0.113.40", "Authorization", mallory); r.Status != http.StatusForbidden {
			t.Errorf("mallory unranks a post: %s", r)
		}
	})

	t.Run("of a kind with keys_in, mallory mints no counter", func(t *testing.T) {
		// Any first use used to create a ranked counter: views:buy-cheap-
		// followers at the top of trending. With keys_in, only the app's
		// documents have counters.
		s.t = t
		mallory := s.user("mallory-kinds", false)
		inc := func(id string) testenv.Response {
			return s.call("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id), "203.0.113.45", "Authorization", mallory)
		}
		for _, id := range []string{"hearts:buy-cheap-followers", "hearts:.."} { // each spends a create token of 3
			if r := inc(id); r.Status != http.StatusNotFound {
				t.Errorf("mallory's first use of %s, with no such post: %s, want 404", id, r)
			}
		}
		fs := testenv.FirestoreAt(t, s.dev.FirestoreHost(), s.project)
		if _, err := fs.Doc("counters/hearts:buy-cheap-followers").Get(context.Background()); status.Code(err) != codes.NotFound {
			t.Errorf("the counter mallory named: %v, want none", err)
		}
		if _, err := fs.Doc("posts/p9").Set(context.Background(), map[string]any{"text": "the app's post"}); err != nil {
			t.Fatal(err)
		}
		if r := inc("hearts:p9"); r.Status != http.StatusOK {
			t.Errorf("a first like of the app's post: %s", r)
		}
	})

	t.Run("first uses spend the create budget", func(t *testing.T) {
		// A counter of a kind comes into being on a user's first like,
		// ranked: minting them costs createCounter's budget (3 here), not
		// the increments' (5).
		s.t = t
		minter := s.user("minter", false)
		inc := func(id string) testenv.Response {
			return s.call("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id), "203.0.113.60", "Authorization", minter)
		}
		for i := range 3 {
			if r := inc(fmt.Sprintf("views:minted-%d", i)); r.Status != http.StatusOK {
				t.Fatalf("first use %d: %s", i, r)
			}
		}
		if r := inc("views:minted-3"); r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "create") {
			t.Errorf("a fourth new counter with the create budget spent: %s, want 429 for create", r)
		}
		if r := inc("views:minted-0"); r.Status != http.StatusOK {
			t.Errorf("an increment of a counter that exists: %s", r)
		}
		// A choice the kind lacks is refused before the first use is paid
		// for: two of them leave the three of the create budget.
		chooser := s.user("chooser", false)
		react := func(id, choice string) testenv.Response {
			return s.call("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"choice":%q}`, id, choice), "203.0.113.61", "Authorization", chooser)
		}
		for i := range 2 {
			if r := react(fmt.Sprintf("reactions:bad-%d", i), "nope"); r.Status != http.StatusBadRequest {
				t.Errorf("a choice the kind lacks: %s, want 400", r)
			}
		}
		for i := range 3 {
			if r := react(fmt.Sprintf("reactions:minted-%d", i), "love"); r.Status != http.StatusOK {
				t.Errorf("first use %d after two refused choices: %s", i, r)
			}
		}
	})

	t.Run("App Check: no token, a forged one, a replayed one", func(t *testing.T) {
		s.t = t
		bob := s.user("bob-app", true)
		for name, tok := range map[string]string{"no token": "", "forged": "e30.e30.sig"} {
			if r := s.call("POST", "incrementCounter", `{"counter_id":"post-1"}`, "203.0.113.50", "Authorization", bob, "X-Firebase-AppCheck", tok); r.Status != http.StatusUnauthorized {
				t.Errorf("%s: %s", name, r)
			}
		}
		tok := s.appToken()
		if r := s.call("POST", "incrementCounter", `{"counter_id":"post-1"}`, "203.0.113.50", "Authorization", bob, "X-Firebase-AppCheck", tok); r.Status != http.StatusOK {
			t.Errorf("a fresh limited-use token: %s", r)
		}
		if r := s.call("POST", "incrementCounter", `{"counter_id":"post-1"}`, "203.0.113.50", "Authorization", bob, "X-Firebase-AppCheck", tok); r.Status != http.StatusUnauthorized {
			t.Errorf("the same token replayed: %s", r)
		}
		// Other functions take a token many times; the backend needs none.
		for range 2 {
			if r := s.call("GET", "getCounter?counter_id=post-1", "", "203.0.113.50", "Authorization", bob, "X-Firebase-AppCheck", tok); r.Status != http.StatusOK {
				t.Errorf("a read with a used token: %s", r)
			}
		}
		if r := s.call("GET", "getCounter?counter_id=post-1", "", "203.0.113.50", "Authorization", admin, "X-Firebase-AppCheck", ""); r.Status != http.StatusOK {
			t.Errorf("the backend without App Check: %s", r)
		}
	})

	t.Run("App Check: a token serves a few accounts, a limited-use one an item", func(t *testing.T) {
		// One valid token carried 40 fresh anonymous accounts to 40
		// likes, and one limited-use token a whole batch.
		s.t = t
		tok := s.appToken()
		served := 0
		for i := range 30 {
			u := s.user(fmt.Sprintf("bot-app-%d", i), true)
			r := s.call("GET", "getCounter?counter_id=post-1", "", fmt.Sprintf("198.18.0.%d", i), "Authorization", u, "X-Firebase-AppCheck", tok)
			switch {
			case r.Status == http.StatusOK:
				served++
			case r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "APP_CHECK_ACCOUNTS"):
				t.Fatalf("account %d: %s", i, r)
			}
		}
		if served != 3 {
			t.Errorf("one App Check token served %d of 30 fresh accounts, want APP_CHECK_ACCOUNTS (3)", served)
		}
		carol := s.user("carol-batch", false)
		items := strings.TrimSuffix(strings.Repeat(`{"counter_id":"post-1"},`, 3), ",")
		r := s.call("POST", "incrementCounter", `{"increments":[`+items+`]}`, "198.18.1.1", "Authorization", carol)
		var list struct{ Results []struct{ Status int } }
		r.Decode(t, &list)
		if len(list.Results) != 3 || list.Results[0].Status != 200 || list.Results[1].Status != 403 || list.Results[2].Status != 403 {
			t.Errorf("a batch of 3 with one limited-use token: %s, want the first item only", r)
		}
	})

	t.Run("prices are for the backend", func(t *testing.T) {
		// An anonymous user recorded a GOOG price of $0.000001 dated 2030,
		// first for every reader.
		s.t = t
		anon := s.user("anon-prices", true)
		price := `{"instruments":[{"symbol":"GOOG","price":{"currency":"USD","micros":1},"exchange":"XNAS","instrumentType":"commonstock","timestamp":"2030-01-01T00:00:00Z"}]}`
		if r := s.call("POST", "recordInstruments", price, "198.18.2.1", "Authorization", anon); r.Status != http.StatusForbidden {
			t.Errorf("an anonymous recordInstruments: %s, want 403", r)
		}
		if r := s.call("POST", "recordInstruments", price, "198.18.2.1", "Authorization", admin); r.Status != http.StatusCreated {
			t.Errorf("the backend's recordInstruments: %s", r)
		}
	})

	t.Run("a /64 and fresh anonymous uids share one budget", func(t *testing.T) {
		s.t = t
		ok := 0
		for i := range 15 {
			uid := s.user(fmt.Sprintf("anon-v6-%d", i), true)
			addr := fmt.Sprintf("2001:db8:aa:bb::%x", i+1) // one /64
			if r := s.call("GET", "getCounter?counter_id=post-1", "", addr, "Authorization", uid); r.Status == http.StatusOK {
				ok++
			}
		}
		if ok != 12 {
			t.Errorf("15 fresh uids from one /64 read %d times, want the address's burst of 12", ok)
		}
		other := s.user("anon-v6-other", true)
		if r := s.call("GET", "getCounter?counter_id=post-1", "", "2001:db8:aa:cc::1", "Authorization", other); r.Status != http.StatusOK {
			t.Errorf("another /64: %s", r)
		}
	})

	t.Run("twenty users behind one NAT", func(t *testing.T) {
		s.t = t
		refused := 0
		for i := range 20 {
			u := s.user(fmt.Sprintf("nat-%d", i), false)
			for range 3 {
				if r := s.call("POST", "incrementCounter", `{"counter_id":"post-1"}`, "192.0.2.77", "Authorization", u); r.Status == http.StatusTooManyRequests {
					refused++
				}
			}
		}
		if refused != 0 {
			t.Errorf("20 users behind one address, 3 likes each: %d refused", refused)
		}
	})

	if st := s.stats(); st.UnbudgetedReads != 0 {
		t.Errorf("%d reads no budget paid for", st.UnbudgetedReads)
	}
}

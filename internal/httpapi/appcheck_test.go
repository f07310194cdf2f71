package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// fakeApps stands in for Google's App Check service, which cannot run
// here: "good-app" and "once-*" tokens are valid, and a "once-*" token
// can be consumed once; consumed counts the calls of its API.
type fakeApps struct {
	used     *sync.Map
	consumed *atomic.Int64
}

func (fakeApps) Verify(_ context.Context, token string) (string, error) {
	switch {
	case token == "down":
		return "", errs.Retryable(nil, time.Second, "App Check keys unavailable")
	case strings.HasPrefix(token, "good-app") || len(token) > 5 && token[:5] == "once-":
		return "1:123:web:abc", nil
	}
	return "", errs.New(errs.Unauthenticated, "not a valid App Check token")
}

func (f fakeApps) Consume(_ context.Context, token string) (bool, error) {
	f.consumed.Add(1)
	_, used := f.used.LoadOrStore(token, true)
	return used, nil
}

func TestAppCheck(t *testing.T) {
	users := func() (Authenticator, error) {
		return func(_ context.Context, r *http.Request) (Caller, error) {
			return Caller{UID: "u1", Admin: r.Header.Get("Authorization") == "Bearer admin"}, nil
		}, nil
	}
	var gotApp string
	for _, mode := range []string{"enforce", "monitor"} {
		apps := fakeApps{&sync.Map{}, &atomic.Int64{}}
		ac := &AppCheck{Monitor: mode == "monitor", Consume: map[string]bool{"like": true}}
		e := &Edge{Logger: quietLogger(), AuthRequired: true, AppCheck: ac}
		endpoint := func(name string) http.HandlerFunc {
			return serve(e, &checks{auth: users, apps: apps}, Endpoint{Name: name, Method: "POST", Public: true, MaxBody: 1024}, func(_ context.Context, r *Request) (int, any, error) {
				gotApp = r.AppID
				return 200, map[string]any{}, nil
			})
		}
		plain, like := endpoint("plain"), endpoint("like")
		enforced := mode == "enforce"
		for _, tc := range []struct {
			name    string
			h       http.HandlerFunc
			headers []string
			refused bool
			status  int
		}{
			{"no token", plain, []string{"Authorization", "Bearer u"}, true, 401},
			{"a bad token", plain, []string{"Authorization", "Bearer u", "X-Firebase-AppCheck", "forged"}, true, 401},
			{"a good token", plain, []string{"Authorization", "Bearer u", "X-Firebase-AppCheck", "good-app"}, false, 200},
			{"admins are exempt", plain, []string{"Authorization", "Bearer admin"}, false, 200},
			{"a limited-use token, first use", like, []string{"Authorization", "Bearer u", "X-Firebase-AppCheck", "once-1"}, false, 200},
			{"the same token again", like, []string{"Authorization", "Bearer u", "X-Firebase-AppCheck", "once-1"}, true, 401},
			{"the service is down", plain, []string{"Authorization", "Bearer u", "X-Firebase-AppCheck", "down"}, true, 503},
		} {
			gotApp = ""
			r := call(tc.h, "POST", "/x", ctJSON, `{"data":{}}`, tc.headers...)
			want := 200
			if tc.refused && enforced {
				want = tc.status
			}
			if r.status != want {
				t.Errorf("%s, %s: %d %s, want %d", mode, tc.name, r.status, r.body, want)
			}
			if r.status == 200 && !tc.refused && tc.headers[1] != "Bearer admin" && gotApp != "1:123:web:abc" {
				t.Errorf("%s, %s: the handler saw app %q", mode, tc.name, gotApp)
			}
		}
		got := ac.Outcomes()
		want := map[string]int64{AppCheckMissing: 1, AppCheckInvalid: 1, AppCheckValid: 2, AppCheckReplayed: 1, AppCheckUnverified: 1}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: outcomes %v, want %v", mode, got, want)
				break
			}
		}
	}
}

func TestAppCheckConsumesOnlyWhatABudgetPaidFor(t *testing.T) {
	// One limited-use token, replayed: each replay called the App Check
	// API, before the caller's budget was even looked at. Now a call the
	// budget refuses consumes nothing, and a replay of a token this
	// instance saw consumed is refused without a call.
	apps := fakeApps{&sync.Map{}, &atomic.Int64{}}
	users := func() (Authenticator, error) {
		return func(context.Context, *http.Request) (Caller, error) { return Caller{UID: "u1"}, nil }, nil
	}
	budget := 1
	e := &Edge{Logger: quietLogger(), AuthRequired: true, AppCheck: &AppCheck{Consume: map[string]bool{"like": true}}}
	like := serve(e, &checks{auth: users, apps: apps}, Endpoint{Name: "like", Method: "POST", Public: true, MaxBody: 1024},
		func(context.Context, *Request) (int, any, error) { return 200, map[string]any{}, nil },
		func(context.Context, *Request) error {
			if budget == 0 {
				return errs.New(errs.ResourceExhausted, "budget spent")
			}
			budget--
			return nil
		})
	headers := []string{"Authorization", "Bearer u", "X-Firebase-AppCheck", "once-7"}
	if r := call(like, "POST", "/x", ctJSON, `{"data":{}}`, headers...); r.status != 200 {
		t.Fatalf("first use: %d %s", r.status, r.body)
	}
	for range 100 {
		if r := call(like, "POST", "/x", ctJSON, `{"data":{}}`, headers...); r.status != 429 {
			t.Fatalf("a replay once the budget is spent: %d %s, want 429", r.status, r.body)
		}
	}
	budget = 100
	for range 100 {
		if r := call(like, "POST", "/x", ctJSON, `{"data":{}}`, headers...); r.status != 401 {
			t.Fatalf("a replay: %d %s, want 401", r.status, r.body)
		}
	}
	if n := apps.consumed.Load(); n != 1 {
		t.Errorf("the App Check API was called %d times for one token, want 1", n)
	}
}

// stalledApps is Google's App Check service stalled: its keys never come
// for the token "stall"; its consume API never answers.
type stalledApps struct{}

func (stalledApps) Verify(ctx context.Context, token string) (string, error) {
	if token != "stall" {
		return "1:123:web:abc", nil
	}
	<-ctx.Done()
	return "", errs.Retryable(ctx.Err(), time.Second, "App Check keys unavailable")
}

func (stalledApps) Consume(ctx context.Context, _ string) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// TestMonitorModeSpendsNotTheRequestsTime: with Google's keys stalled, a
// check in monitor mode waited out the request's whole deadline, and the
// request it let through then failed its Firestore calls (503).
func TestMonitorModeSpendsNotTheRequestsTime(t *testing.T) {
	users := func() (Authenticator, error) {
		return func(context.Context, *http.Request) (Caller, error) { return Caller{UID: "u1"}, nil }, nil
	}
	ac := &AppCheck{Monitor: true, Consume: map[string]bool{"like": true}}
	const deadline = 10 * time.Second
	e := &Edge{Logger: quietLogger(), AuthRequired: true, AppCheck: ac, Deadline: deadline}
	for name, token := range map[string]string{"plain": "stall", "like": "once-1"} {
		var left time.Duration
		h := serve(e, &checks{auth: users, apps: stalledApps{}}, Endpoint{Name: name, Method: "POST", Public: true, MaxBody: 1024}, func(ctx context.Context, _ *Request) (int, any, error) {
			d, _ := ctx.Deadline()
			left = time.Until(d)
			return 200, map[string]any{}, ctx.Err()
		})
		r := call(h, "POST", "/x", ctJSON, `{"data":{}}`, "Authorization", "Bearer u1", appCheckHeader, token)
		if r.status != 200 || left < deadline-3*monitorWait {
			t.Errorf("%s: %d with %s of the request's %s left, want 200 and at most %s spent on App Check", name, r.status, left, deadline, monitorWait)
		}
	}
}

func TestAnAppCheckTokenServesAFewAccounts(t *testing.T) {
	// One valid token (an hour's life) carried 40 fresh anonymous
	// accounts to 40 likes: a token was verified, never bound to anyone.
	for _, mode := range []string{"enforce", "monitor"} {
		ac := &AppCheck{Monitor: mode == "monitor", Accounts: 3}
		e := &Edge{Logger: quietLogger(), AuthRequired: true, AppCheck: ac}
		users := func() (Authenticator, error) {
			return func(_ context.Context, r *http.Request) (Caller, error) {
				return Caller{UID: r.Header.Get("Authorization")}, nil
			}, nil
		}
		var tokens []string
		h := serve(e, &checks{auth: users, apps: fakeApps{&sync.Map{}, &atomic.Int64{}}}, Endpoint{Name: "like", Method: "POST", Public: true, MaxBody: 1024},
			func(_ context.Context, r *Request) (int, any, error) {
				tokens = append(tokens, r.AppToken)
				return 200, map[string]any{}, nil
			})
		served := 0
		for i := range 40 {
			// Spelled many ways: the signature's last base64 character
			// carries ignored bits, and each spelling verifies.
			r := call(h, "POST", "/x", ctJSON, `{}`, "Authorization", fmt.Sprint("account-", i), "X-Firebase-AppCheck", "good-app.sig"+string(rune('A'+i%16)))
			switch {
			case r.status == 200:
				served++
			case r.status != 403 || !strings.Contains(r.body, "APP_CHECK_ACCOUNTS"):
				t.Fatalf("%s: account %d: %d %s", mode, i, r.status, r.body)
			}
		}
		for i := range 3 { // the accounts it served go on
			if r := call(h, "POST", "/x", ctJSON, `{}`, "Authorization", fmt.Sprint("account-", i), "X-Firebase-AppCheck", "good-app.sigZ"); r.status != 200 {
				t.Errorf("%s: account %d again: %d %s", mode, i, r.status, r.body)
			}
		}
		if want := map[string]int{"enforce": 3, "monitor": 40}[mode]; served != want {
			t.Errorf("%s: one token served %d of 40 accounts, want %d", mode, served, want)
		}
		if got := ac.Outcomes()[AppCheckOverused]; got != 37 {
			t.Errorf("%s: %d calls counted overused, want 37", mode, got)
		}
		if tokens[0] == "" || tokens[0] != tokens[len(tokens)-1] || strings.Contains(tokens[0], "good") {
			t.Errorf("%s: the handler saw token digests %q…, want one digest, not the token", mode, tokens[:2])
		}
	}
}

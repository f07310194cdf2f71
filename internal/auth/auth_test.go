package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// unsignedToken is an ID token as the Auth emulator issues them.
func unsignedToken(project, uid string, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now()
	c := map[string]any{"iss": "https://securetoken.google.com/" + project, "aud": project, "sub": uid, "user_id": uid,
		"auth_time": now.Unix(), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"firebase": map[string]any{"sign_in_provider": "password", "identities": map[string]any{}}}
	for k, v := range claims {
		c[k] = v
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(c) + "."
}

// TestVerifiedTokensAreRemembered: a token is checked once, then trusted
// until it expires (or recheckEvery); in emulator mode each check asks
// the Auth emulator for the user. The stand-in here counts those lookups,
// which the real emulator cannot.
func TestVerifiedTokensAreRemembered(t *testing.T) {
	var lookups atomic.Int64
	emu := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "accounts:lookup") {
			http.NotFound(w, r)
			return
		}
		lookups.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"users":[{"localId":"u1"}]}`))
	}))
	defer emu.Close()
	t.Setenv("FIREBASE_AUTH_EMULATOR_HOST", strings.TrimPrefix(emu.URL, "http://"))
	v, err := New(context.Background(), "demo-p")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	v.now = func() time.Time { return now }
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer "+unsignedToken("demo-p", "u1", map[string]any{"admin": true}))
	for range 3 {
		c, err := v.Authenticate(context.Background(), req)
		if err != nil || c.UID != "u1" || !c.Admin {
			t.Fatalf("Authenticate: %+v %v", c, err)
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Fatalf("%d lookups for three requests with one token, want 1", n)
	}
	now = now.Add(recheckEvery + time.Second)
	if _, err := v.Authenticate(context.Background(), req); err != nil || lookups.Load() != 2 {
		t.Fatalf("after recheckEvery: %v, %d lookups, want a second check", err, lookups.Load())
	}
	// A token refused is not remembered: it is checked every time.
	bad := httptest.NewRequest("GET", "/", nil)
	bad.Header.Set("Authorization", "Bearer "+unsignedToken("demo-other", "u1", nil))
	for range 2 {
		if _, err := v.Authenticate(context.Background(), bad); err == nil {
			t.Fatal("a token of another project was accepted")
		}
	}
}

// TestAnAccountsStateIsNamed: a disabled account, one whose sessions were
// revoked after its token was issued, and a deleted one are each told so,
// not that the token is not valid for the project. The Auth emulator's
// lookup answers each state here (a stand-in: the SDK checks them on
// every token in emulator mode, by this lookup).
func TestAnAccountsStateIsNamed(t *testing.T) {
	var answer atomic.Value
	emu := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer.Load().(string)))
	}))
	defer emu.Close()
	t.Setenv("FIREBASE_AUTH_EMULATOR_HOST", strings.TrimPrefix(emu.URL, "http://"))
	v, err := New(context.Background(), "demo-p")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, lookup, want string
	}{
		{"disabled", `{"users":[{"localId":"u1","disabled":true}]}`, "this account is disabled"},
		{"revoked", `{"users":[{"localId":"u1","validSince":"` + strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10) + `"}]}`, "was revoked"},
		{"deleted", `{}`, "was deleted"},
	} {
		answer.Store(tc.lookup)
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", "Bearer "+unsignedToken("demo-p", "u1", nil))
		if _, err := v.Authenticate(context.Background(), req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("a %s account: %v, want %q", tc.name, err, tc.want)
		}
	}
}

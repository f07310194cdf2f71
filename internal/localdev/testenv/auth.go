package testenv

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"
)

// AuthEmulatorHost returns FIREBASE_AUTH_EMULATOR_HOST, or an error saying
// how to get one.
func AuthEmulatorHost() (string, error) {
	if h := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST"); h != "" {
		return h, nil
	}
	return "", fmt.Errorf("FIREBASE_AUTH_EMULATOR_HOST is not set: run the tests with scripts/test.sh, which starts the Auth emulator")
}

// AuthProject is the project of the Auth emulator's own sign-in flows: a
// Firebase SDK signing in with an API key gets tokens for the project the
// emulator was started with (scripts/test.sh exports it as
// SHARDCOUNT_AUTH_PROJECT), not for the app's projectId. Tests that sign in
// through the SDK serve their functions in this project.
func AuthProject() string {
	if p := os.Getenv("SHARDCOUNT_AUTH_PROJECT"); p != "" {
		return p
	}
	return "demo-shardcount"
}

// CreateUser adds a user with the given uid to project in the Auth
// emulator.
func CreateUser(tb testing.TB, project, uid string) {
	tb.Helper()
	host, err := AuthEmulatorHost()
	if err != nil {
		tb.Fatal(err)
	}
	CreateUserAt(tb, host, project, uid)
}

// CreateUserAt adds a user to project in the Auth emulator at host.
func CreateUserAt(tb testing.TB, host, project, uid string) {
	tb.Helper()
	body, _ := json.Marshal(map[string]string{"localId": uid})
	req, _ := http.NewRequest("POST", "http://"+host+"/identitytoolkit.googleapis.com/v1/projects/"+project+"/accounts", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer owner")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("create user %s: %v", uid, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("create user %s: %s", uid, resp.Status)
	}
}

// IDToken mints an unsigned Firebase ID token (alg "none"), as the Auth
// emulator issues: the Admin SDK's emulator mode and the Firestore emulator's
// rules accept it. It is valid from issued to expires.
func IDToken(project, uid string, issued, expires time.Time) string {
	return token(project, uid, "custom", issued, expires)
}

// AnonymousIDToken mints a token of a user of anonymous sign-in, valid for
// the next hour.
func AnonymousIDToken(project, uid string) string {
	now := time.Now()
	return token(project, uid, "anonymous", now.Add(-time.Minute), now.Add(time.Hour))
}

// AdminIDToken mints a token of uid with the custom claim admin: true (an
// app's backend identity), valid for the next hour.
func AdminIDToken(project, uid string) string {
	now := time.Now()
	return token(project, uid, "custom", now.Add(-time.Minute), now.Add(time.Hour), "admin", true)
}

func token(project, uid, provider string, issued, expires time.Time, extra ...any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	header := enc(map[string]string{"alg": "none", "typ": "JWT"})
	claims := map[string]any{
		"iss":       "https://securetoken.google.com/" + project,
		"aud":       project,
		"sub":       uid,
		"user_id":   uid,
		"auth_time": issued.Unix(),
		"iat":       issued.Unix(),
		"exp":       expires.Unix(),
		"firebase":  map[string]any{"sign_in_provider": provider, "identities": map[string]any{}},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		claims[extra[i].(string)] = extra[i+1]
	}
	body := enc(claims)
	return header + "." + body + "."
}

// ValidIDToken mints a token of uid valid for the next hour.
func ValidIDToken(project, uid string) string {
	now := time.Now()
	return IDToken(project, uid, now.Add(-time.Minute), now.Add(time.Hour))
}

// Package auth checks the Firebase ID tokens apps send to the HTTP
// functions, with the Firebase Admin SDK.
//
// In production a token's signature is checked against Google's public keys
// (fetched once and cached, no call per request). With
// FIREBASE_AUTH_EMULATOR_HOST set, the Admin SDK runs in emulator mode: it
// accepts unsigned tokens and asks the Auth emulator whether the user exists
// and is enabled.
package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unsafe"

	firebase "firebase.google.com/go/v4"
	fbauth "firebase.google.com/go/v4/auth"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/sizedlru"
)

// Verifier authenticates requests.
type Verifier struct {
	client *fbauth.Client
	// verified remembers the tokens already checked, until they expire:
	// a mobile app sends the same token for up to an hour. In production a
	// check costs a signature verification; with the Auth emulator it also
	// asks the emulator for the user, on every request.
	verified *sizedlru.Cache[[32]byte, verifiedToken]
	now      func() time.Time
}

type verifiedToken struct {
	caller  httpapi.Caller
	expires time.Time
}

// maxVerified bounds the tokens remembered, and verifiedShare the memory
// they take (a 32nd of the instance's); the least recently used go first.
const (
	maxVerified   = 100_000
	verifiedShare = 1.0 / 32
)

// recheckEvery bounds how long a token is trusted without a check, whatever
// its expiry.
const recheckEvery = 5 * time.Minute

// New returns a Verifier for the project's tokens.
func New(ctx context.Context, projectID string) (*Verifier, error) {
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: projectID})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	client, err := app.Auth(ctx)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	verified := sizedlru.New(maxVerified, sizedlru.Share(verifiedShare), func(_ [32]byte, t verifiedToken) int {
		return sizedlru.Entry + 32 + int(unsafe.Sizeof(t)) + len(t.caller.UID)
	})
	return &Verifier{client: client, verified: verified, now: time.Now}, nil
}

// Authenticate returns the request's caller, from "Authorization: Bearer
// <Firebase ID token>", or an UNAUTHENTICATED error saying what to fix.
func (v *Verifier) Authenticate(ctx context.Context, r *http.Request) (httpapi.Caller, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return httpapi.Caller{}, errs.New(errs.Unauthenticated, "Authorization header is missing: send \"Bearer <Firebase ID token>\"")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return httpapi.Caller{}, errs.New(errs.Unauthenticated, "Authorization header must be \"Bearer <Firebase ID token>\"")
	}
	token = strings.TrimSpace(token)
	key := sha256.Sum256([]byte(token))
	if c, ok := v.verified.Get(key); ok && v.now().Before(c.expires) {
		return c.caller, nil
	}
	t, err := v.client.VerifyIDToken(ctx, token)
	switch {
	case err == nil:
		admin, _ := t.Claims["admin"].(bool)
		caller := httpapi.Caller{UID: t.UID, Anonymous: t.Firebase.SignInProvider == "anonymous", Admin: admin, IssuedAt: time.Unix(t.IssuedAt, 0)}
		expires := time.Unix(t.Expires, 0)
		if limit := v.now().Add(recheckEvery); expires.After(limit) {
			expires = limit
		}
		v.verified.Add(key, verifiedToken{caller: caller, expires: expires})
		return caller, nil
	case fbauth.IsIDTokenExpired(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: the ID token has expired; get a fresh one from the Firebase SDK")
	case fbauth.IsUserDisabled(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: this account is disabled")
	case fbauth.IsIDTokenRevoked(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: the ID token was revoked (the account's sessions were revoked after it was issued); sign in again")
	case fbauth.IsUserNotFound(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: the account of this ID token was deleted")
	case fbauth.IsIDTokenInvalid(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: the ID token is not valid for this project")
	}
	// Fetching Google's keys (or reaching the Auth emulator) failed.
	return httpapi.Caller{}, errs.Retryable(err, time.Second, "cannot check ID tokens right now; retry shortly")
}

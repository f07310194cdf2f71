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
	"fmt"
	"net/http"
	"strings"
	"time"

	firebase "firebase.google.com/go/v4"
	fbauth "firebase.google.com/go/v4/auth"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
)

// Verifier authenticates requests.
type Verifier struct {
	client *fbauth.Client
}

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
	return &Verifier{client: client}, nil
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
	t, err := v.client.VerifyIDToken(ctx, strings.TrimSpace(token))
	switch {
	case err == nil:
		admin, _ := t.Claims["admin"].(bool)
		return httpapi.Caller{UID: t.UID, Anonymous: t.Firebase.SignInProvider == "anonymous", Admin: admin}, nil
	case fbauth.IsIDTokenExpired(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: the ID token has expired; get a fresh one from the Firebase SDK")
	case fbauth.IsIDTokenInvalid(err), fbauth.IsUserDisabled(err), fbauth.IsIDTokenRevoked(err), fbauth.IsUserNotFound(err):
		return httpapi.Caller{}, errs.Wrap(errs.Unauthenticated, err, "Authorization: the ID token is not valid for this project")
	}
	// Fetching Google's keys (or reaching the Auth emulator) failed.
	return httpapi.Caller{}, errs.Retryable(err, time.Second, "cannot check ID tokens right now; retry shortly")
}

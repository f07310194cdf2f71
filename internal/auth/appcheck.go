package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	appcheckapi "google.golang.org/api/firebaseappcheck/v1beta"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
)

// Apps verifies App Check tokens with the Admin SDK (signature, project,
// expiry, against Google's public keys, fetched once and refreshed every
// six hours), and consumes limited-use tokens through the App Check API,
// which the Go Admin SDK does not offer: its REST method
// projects.verifyAppCheckToken, the call the Node Admin SDK makes for
// verifyToken(token, {consume: true}).
type Apps struct {
	client  *appcheck.Client
	api     *appcheckapi.Service
	project string
}

// AppsOptions point the verifier somewhere other than Google, for local
// runs and tests: Google's App Check service cannot run here.
type AppsOptions struct {
	// JWKSURL serves the keys tokens are signed with; empty: Google's.
	JWKSURL string
	// APIURL is the App Check API's base URL; empty: Google's. The local
	// one takes no credentials.
	APIURL string
}

// jwksMu guards the Admin SDK's one setting of where keys come from, a
// package variable it reads when a client is made.
var jwksMu sync.Mutex

// NewApps returns a verifier of projectID's App Check tokens. It fetches
// the public keys first, within ctx's deadline.
func NewApps(ctx context.Context, projectID string, o AppsOptions) (*Apps, error) {
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: projectID}, option.WithoutAuthentication())
	if err != nil {
		return nil, fmt.Errorf("auth: app check: %w", err)
	}
	type made struct {
		c   *appcheck.Client
		err error
	}
	done := make(chan made, 1)
	go func() {
		jwksMu.Lock()
		defer jwksMu.Unlock()
		if o.JWKSURL != "" {
			defer func(url string) { appcheck.JWKSUrl = url }(appcheck.JWKSUrl)
			appcheck.JWKSUrl = o.JWKSURL
		}
		// Not ctx: the client refreshes its keys in the background for
		// as long as it lives, and ctx is one request's.
		c, err := app.AppCheck(context.Background())
		done <- made{c, err}
	}()
	var m made
	select {
	case m = <-done:
	case <-ctx.Done():
		return nil, errs.Retryable(ctx.Err(), time.Second, "cannot fetch App Check's public keys right now; retry shortly")
	}
	if m.err != nil {
		return nil, errs.Retryable(m.err, time.Second, "cannot fetch App Check's public keys right now; retry shortly")
	}
	opts := []option.ClientOption{}
	if o.APIURL != "" {
		opts = append(opts, option.WithEndpoint(o.APIURL), option.WithoutAuthentication(), option.WithHTTPClient(http.DefaultClient))
	}
	api, err := appcheckapi.NewService(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("auth: the App Check API: %w", err)
	}
	return &Apps{client: m.c, api: api, project: projectID}, nil
}

// Verify returns the Firebase app id of a valid token; any other token is
// UNAUTHENTICATED.
func (a *Apps) Verify(_ context.Context, token string) (appID string, err error) {
	defer func() {
		// The SDK asserts the types of some claims of a token whose
		// signature it checked: only Google's key could make one panic,
		// but a panic must not take the request with it.
		if p := recover(); p != nil {
			appID, err = "", errs.New(errs.Unauthenticated, "X-Firebase-AppCheck is not a valid App Check token")
		}
	}()
	t, err := a.client.VerifyToken(token)
	if err != nil {
		return "", &errs.Error{Code: errs.Unauthenticated, Field: "X-Firebase-AppCheck", Err: err,
			Message: "X-Firebase-AppCheck is not a valid App Check token of this project"}
	}
	return t.AppID, nil
}

// Consume marks a limited-use token used, through the App Check API, and
// reports whether it had been used before. The token was verified first,
// so the API refusing it (403) means the functions may not call it: their
// service account lacks the App Check Token Verifier role, which is logged
// as an error and answered UNAVAILABLE, not blamed on the caller. A token
// the API cannot read (400) is UNAUTHENTICATED; any other failure is
// UNAVAILABLE.
func (a *Apps) Consume(ctx context.Context, token string) (bool, error) {
	resp, err := a.api.Projects.VerifyAppCheckToken("projects/"+a.project,
		&appcheckapi.GoogleFirebaseAppcheckV1betaVerifyAppCheckTokenRequest{AppCheckToken: token}).Context(ctx).Do()
	if gerr, ok := errors.AsType[*googleapi.Error](err); ok {
		switch gerr.Code {
		case http.StatusBadRequest:
			return false, &errs.Error{Code: errs.Unauthenticated, Field: "X-Firebase-AppCheck", Err: err,
				Message: "X-Firebase-AppCheck is not a limited-use App Check token of this project"}
		case http.StatusForbidden:
			logging.FromContext(ctx).Error("the App Check API refused to consume a verified token: grant the functions' service account the Firebase App Check Token Verifier role (roles/firebaseappcheck.tokenVerifier), or remove APP_CHECK_CONSUME", "error", err.Error())
		}
	}
	if err != nil {
		return false, errs.Retryable(err, time.Second, "cannot reach the App Check API right now; retry shortly")
	}
	return resp.AlreadyConsumed, nil
}

package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
)

// Caller is who sent a request, from its Firebase ID token.
type Caller struct {
	UID       string
	Anonymous bool // signed in with Firebase anonymous sign-in
	Admin     bool // the token carries the custom claim admin: true
}

// Authenticator returns the caller of a request that carries an
// Authorization header, or an UNAUTHENTICATED error.
type Authenticator func(ctx context.Context, r *http.Request) (Caller, error)

// identify sets the request's caller from its token, within ctx's
// deadline: a token check that would outlast it (a stalled fetch of
// Google's public keys, which holds a lock every check needs) answers 503
// instead, and leaves the check to finish on its own.
func (e *Edge) identify(ctx context.Context, req *Request) error {
	if !e.AuthRequired && req.HTTP.Header.Get("Authorization") == "" {
		req.Admin = true // AUTH=off: anyone may do anything
		return nil
	}
	var authenticate Authenticator
	if e.Authenticate != nil {
		a, err := e.Authenticate()
		if err != nil {
			return err
		}
		authenticate = a
	}
	if authenticate == nil {
		return errs.New(errs.Unauthenticated, "this function checks no tokens (its authentication is not set up)")
	}
	type checked struct {
		caller Caller
		err    error
	}
	done := make(chan checked, 1)
	go func() {
		c, err := authenticate(ctx, req.HTTP)
		done <- checked{c, err}
	}()
	var c checked
	select {
	case c = <-done:
	case <-ctx.Done():
		return retryLater(ctx.Err(), "ID tokens")
	}
	if c.err != nil {
		return c.err
	}
	req.User, req.Anonymous, req.Admin = c.caller.UID, c.caller.Anonymous, c.caller.Admin || !e.AuthRequired
	logging.Annotate(ctx, "user", c.caller.UID)
	return nil
}

// AppCheckMode is how public endpoints treat App Check tokens (APP_CHECK).
type AppCheckMode string

const (
	AppCheckOff AppCheckMode = "off"
	// AppCheckMonitor checks and counts the tokens, refusing nothing.
	AppCheckMonitor AppCheckMode = "monitor"
	// AppCheckEnforce refuses an end user's call without a valid token.
	AppCheckEnforce AppCheckMode = "enforce"
)

// AppVerifier checks App Check tokens (internal/auth, with the Admin SDK).
type AppVerifier interface {
	// Verify returns the Firebase app id of a valid token. An invalid token
	// is an UNAUTHENTICATED error; a check that cannot be made now is
	// UNAVAILABLE.
	Verify(ctx context.Context, token string) (appID string, err error)
	// Consume marks a limited-use token used, and reports whether it had
	// been used before.
	Consume(ctx context.Context, token string) (alreadyUsed bool, err error)
}

// AppCheck is how public endpoints check the App Check token
// (X-Firebase-AppCheck) of an end user's call; admins (an app's own
// backends) are exempt.
type AppCheck struct {
	Mode AppCheckMode
	// Verifier returns the token checker; it is looked up per request, so
	// it may be built lazily.
	Verifier func() (AppVerifier, error)
	// Consume names the endpoints whose calls must carry a limited-use
	// token, consumed on use: a replayed token is refused.
	Consume map[string]bool

	mu       sync.Mutex
	outcomes map[string]int64
}

// App Check outcomes, as counted and logged.
const (
	AppCheckValid      = "valid"
	AppCheckMissing    = "missing"
	AppCheckInvalid    = "invalid"
	AppCheckReplayed   = "replayed"
	AppCheckUnverified = "unverified" // the check could not be made (503 when enforced)
)

// Outcomes returns how many checks had each outcome so far.
func (a *AppCheck) Outcomes() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int64, len(a.outcomes))
	for k, v := range a.outcomes {
		out[k] = v
	}
	return out
}

// checkApp checks the request's App Check token, after its caller is
// known: in monitor mode it only counts and logs the outcome.
func (e *Edge) checkApp(ctx context.Context, ep Endpoint, req *Request) error {
	a := e.AppCheck
	if a == nil || a.Mode == AppCheckOff || a.Mode == "" || req.Admin {
		return nil
	}
	outcome, appID, err := a.check(ctx, req.HTTP.Header.Get("X-Firebase-AppCheck"), a.Consume[ep.Name])
	a.mu.Lock()
	if a.outcomes == nil {
		a.outcomes = map[string]int64{}
	}
	a.outcomes[outcome]++
	a.mu.Unlock()
	logging.Annotate(ctx, "app_check", outcome)
	if outcome == AppCheckValid {
		req.AppID = appID
		return nil
	}
	if a.Mode == AppCheckMonitor {
		return nil
	}
	return err
}

func (a *AppCheck) check(ctx context.Context, token string, consume bool) (outcome, appID string, err error) {
	if token == "" {
		return AppCheckMissing, "", &errs.Error{Code: errs.Unauthenticated, Field: "X-Firebase-AppCheck",
			Message: "X-Firebase-AppCheck is missing: this function accepts calls from your apps only (App Check)"}
	}
	v, err := a.Verifier()
	if err != nil {
		return AppCheckUnverified, "", err
	}
	if appID, err = v.Verify(ctx, token); err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			return AppCheckInvalid, "", err
		}
		return AppCheckUnverified, "", err
	}
	if consume {
		used, err := v.Consume(ctx, token)
		switch {
		case err != nil:
			return AppCheckUnverified, "", err
		case used:
			return AppCheckReplayed, "", &errs.Error{Code: errs.Unauthenticated, Field: "X-Firebase-AppCheck",
				Message: "X-Firebase-AppCheck was used before: this function takes a limited-use token once (limitedUseAppCheckTokens)"}
		}
	}
	return AppCheckValid, appID, nil
}

// retryLater is the error of a check that cannot be made now.
func retryLater(cause error, what string) error {
	return errs.Retryable(cause, time.Second, "cannot check %s right now; retry shortly", what)
}

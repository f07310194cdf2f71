package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
)

// Caller is who sent a request, from its Firebase ID token.
type Caller struct {
	UID       string
	Anonymous bool // signed in with Firebase anonymous sign-in
	Admin     bool // the token carries the custom claim admin: true
	// IssuedAt is when the token was issued (its iat, to the second).
	IssuedAt time.Time
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
	authenticate, err := e.Backend.Authenticator()
	if err != nil {
		return err
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
	req.User, req.Anonymous, req.Admin, req.IssuedAt = c.caller.UID, c.caller.Anonymous, c.caller.Admin || !e.AuthRequired, c.caller.IssuedAt
	logging.Annotate(ctx, "user", c.caller.UID)
	return nil
}

// retryLater is the error of a check that cannot be made now.
func retryLater(cause error, what string) error {
	return errs.Retryable(cause, time.Second, "cannot check %s right now; retry shortly", what)
}

package httpapi

import (
	"context"
	"net/http"
)

// checks are the token checks of the tests' backend; nil parts check
// nothing.
type checks struct {
	auth func() (Authenticator, error)
	apps AppVerifier
}

// testBackend serves one handler behind an edge, with checks.
type testBackend struct {
	checks *checks
	admit  func(context.Context, *Request) error
	handle Handle
}

func (b testBackend) Authenticator() (Authenticator, error) {
	if b.checks == nil || b.checks.auth == nil {
		return nil, nil
	}
	return b.checks.auth()
}

func (b testBackend) AppVerifier(context.Context) (AppVerifier, error) { return b.checks.apps, nil }

func (b testBackend) Admit(ctx context.Context, req *Request) error {
	if b.admit == nil {
		return nil
	}
	return b.admit(ctx, req)
}

func (b testBackend) Handle(ctx context.Context, req *Request) (int, any, error) {
	return b.handle(ctx, req)
}

// serve returns e's handler of ep, served by handle (and admit, if
// given), checked with c.
func serve(e *Edge, c *checks, ep Endpoint, handle Handle, admit ...func(context.Context, *Request) error) http.HandlerFunc {
	b := testBackend{checks: c, handle: handle}
	if len(admit) > 0 {
		b.admit = admit[0]
	}
	edge := *e
	edge.Backend = b
	return edge.Handler(ep)
}

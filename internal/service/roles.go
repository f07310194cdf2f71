package service

import (
	"context"
	"fmt"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
)

// Who may do what (README "Who may do what"). With AUTH=required a caller
// is an admin (custom claim admin: true), a counter's owner (the uid that
// created it), a signed-in user, or a user of anonymous sign-in. With
// AUTH=off every caller is an admin.

type role int

const (
	anonymousRole role = iota
	userRole
	ownerRole
	adminRole
)

func (r role) String() string {
	return [...]string{"a user of anonymous sign-in", "a signed-in user", "the counter's owner", "an admin"}[r]
}

// roleOf is the caller's role for counter c.
func roleOf(req *httpapi.Request, c counter.Counter) role {
	switch {
	case req.Admin:
		return adminRole
	case req.User != "" && req.User == c.Owner:
		return ownerRole
	case req.Anonymous:
		return anonymousRole
	}
	return userRole
}

// manage spends the caller's budget b on an action only a counter's owner
// and admins may take (reshard, reset, delete), then reads counter id with
// read (the store's Read, or Document to see a deleted counter's tombstone
// too) to check the role. The budget comes first so that refused attempts
// cannot make reads beyond it.
func (a *app) manage(ctx context.Context, req *httpapi.Request, id string, read func(context.Context, string) (counter.Counter, error), b ratelimit.Budget) error {
	logging.Annotate(ctx, "counter_id", id)
	if err := a.allow(req, b, 1); err != nil {
		return err
	}
	c, err := read(ctx, id)
	if err != nil {
		return err
	}
	if r := roleOf(req, c); r < ownerRole {
		return errs.New(errs.PermissionDenied, "%s changes a counter's shards or value only for its owner or an admin; you are %s", req.Function, r)
	}
	return nil
}

// mayAdd lets end users change a plain counter by at most USER_MAX_DELTA,
// and its owner and admins by any delta.
func (a *app) mayAdd(req *httpapi.Request, c counter.Counter, delta int64) error {
	if r := roleOf(req, c); r < ownerRole && (delta > a.cfg.UserMaxDelta || delta < -a.cfg.UserMaxDelta) {
		return &errs.Error{Code: errs.PermissionDenied, Field: "delta",
			Message: fmt.Sprintf("delta beyond ±%d needs the counter's owner or an admin (USER_MAX_DELTA); you are %s", a.cfg.UserMaxDelta, r)}
	}
	return nil
}

// mayCreate lets admins and signed-in users create counters, users of
// anonymous sign-in only with ANONYMOUS_CREATE=on; it returns the most
// shards the caller may give one.
func (a *app) mayCreate(req *httpapi.Request) (int, error) {
	switch {
	case req.Admin:
		return counter.MaxShards, nil
	case req.Anonymous && !a.cfg.AnonymousCreate:
		return 0, errs.New(errs.PermissionDenied, "createCounter is not open to users of anonymous sign-in (ANONYMOUS_CREATE): sign in with an account")
	}
	return a.cfg.UserMaxShards, nil
}

// allow takes n tokens of budget b from the caller's budgets: its user's
// and its address's. Admins have none.
func (a *app) allow(req *httpapi.Request, b ratelimit.Budget, n int) error {
	if req.Admin {
		return nil
	}
	keys := []string{"addr:" + req.ClientAddr}
	if req.User != "" {
		keys = append(keys, "user:"+req.User)
	}
	if ok, wait := a.limiter.Take(b, n, keys...); !ok {
		return &errs.Error{Code: errs.ResourceExhausted, RetryAfter: wait,
			Message: fmt.Sprintf("too many requests from this user or address (budget %q, see RATE_LIMITS); retry after the time in Retry-After", b)}
	}
	return nil
}

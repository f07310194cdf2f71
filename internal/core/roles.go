package core

import (
	"context"
	"fmt"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
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
func roleOf(caller Caller, c counter.Counter) role {
	switch {
	case caller.Admin:
		return adminRole
	case caller.User != "" && caller.User == c.Owner:
		return ownerRole
	case caller.Anonymous:
		return anonymousRole
	}
	return userRole
}

// manage spends the caller's budget b on an action only a counter's owner
// and admins may take (reshard, reset, delete, list its members), then reads counter id with
// read (Counters.Live, or Stored to see a deleted counter's tombstone
// too) to check the role. The budget comes first so that refused attempts
// cannot make reads beyond it.
func (core *Core) manage(ctx context.Context, caller Caller, id string, read func(context.Context, string) (counter.Counter, error), b ratelimit.Budget) (counter.Counter, error) {
	logging.Annotate(ctx, "counter_id", id)
	if err := core.allow(ctx, caller, b, 1); err != nil {
		return counter.Counter{}, err
	}
	c, err := read(ctx, id)
	if err != nil {
		return counter.Counter{}, err
	}
	if r := roleOf(caller, c); r < ownerRole {
		return counter.Counter{}, errs.New(errs.PermissionDenied, "%s is for the counter's owner or an admin; you are %s", caller.Function, r)
	}
	return c, nil
}

// mayAdd lets end users change a plain counter by at most USER_MAX_DELTA,
// and its owner and admins by any delta.
func (core *Core) mayAdd(caller Caller, c counter.Counter, delta int64) error {
	r := roleOf(caller, c)
	if r < ownerRole && (delta > core.cfg.UserMaxDelta || delta < -core.cfg.UserMaxDelta) {
		return &errs.Error{Code: errs.PermissionDenied, Field: "delta",
			Message: fmt.Sprintf("delta beyond ±%d needs the counter's owner or an admin (USER_MAX_DELTA); you are %s", core.cfg.UserMaxDelta, r)}
	}
	if kind, ok := core.cfg.Kinds[c.Kind]; ok && r < ownerRole && delta < 0 && !kind.UsersDecrement() {
		return &errs.Error{Code: errs.PermissionDenied, Field: "delta",
			Message: fmt.Sprintf("counters of kind %q only go up for end users (its decrement is for admins)", kind.Name)}
	}
	return nil
}

// mayCreate lets admins create counters, signed-in users with
// USER_CREATE=on, users of anonymous sign-in with ANONYMOUS_CREATE=on
// too; it returns the counter's origin and the most shards the caller may
// give it.
func (core *Core) mayCreate(caller Caller) (counter.Origin, int, error) {
	switch {
	case caller.Admin:
		return counter.ByAdmin, counter.MaxShards, nil
	case !core.cfg.UserCreate:
		return "", 0, errs.New(errs.PermissionDenied, "createCounter is for admins (an app's backend): end users count on counters of kinds, created by their first use (USER_CREATE is off)")
	case caller.Anonymous && !core.cfg.AnonymousCreate:
		return "", 0, errs.New(errs.PermissionDenied, "createCounter is not open to users of anonymous sign-in (ANONYMOUS_CREATE): sign in with an account")
	}
	return counter.ByUser, core.cfg.UserMaxShards, nil
}

// allow takes n tokens of budget b from the caller's budgets: its user's,
// its address's and subnets', its App Check token's, and books them on the request's ledger. Admins have
// none. Every handler spends before it reads anything.
func (core *Core) allow(ctx context.Context, caller Caller, b ratelimit.Budget, n int) error {
	return core.allowPaying(ctx, caller, b, n, n*core.readsPaid[b])
}

// allowPaying is allow, booking reads on the ledger: for a use of a budget
// that reads less than what it pays for elsewhere.
func (core *Core) allowPaying(ctx context.Context, caller Caller, b ratelimit.Budget, n, reads int) error {
	if caller.Admin {
		return nil
	}
	if ok, wait := core.limiter.Take(b, n, caller.budgetKeys()...); !ok {
		return &errs.Error{Code: errs.ResourceExhausted, RetryAfter: wait,
			Message: fmt.Sprintf("too many requests from this user or address (budget %q, see RATE_LIMITS, ADDRESS_RATE_LIMITS and SUBNET_RATE_LIMITS); retry after the time in Retry-After", b)}
	}
	ledger.Pay(ctx, reads)
	return nil
}

// spendAtOnce spends tokens of budget b on what (a format and its args):
// more than the budget holds at once is a 400 on field naming what, not a
// 429 no wait gets past.
func (core *Core) spendAtOnce(ctx context.Context, caller Caller, b ratelimit.Budget, field string, tokens int, what string, args ...any) error {
	if most := core.limiter.Burst(b, caller.budgetKeys()...); !caller.Admin && tokens > most {
		return errs.Invalid(field, "%s spends %d tokens of %s: this deployment's budget (RATE_LIMITS) allows at most %d at once", fmt.Sprintf(what, args...), tokens, b, most)
	}
	return core.allow(ctx, caller, b, tokens)
}

// readsPaid is how many Firestore documents (or aggregations) one token of
// each budget pays for: the most its function reads for it. A request
// that reads more is logged as reading without a budget
// (internal/ledger). perIncrement and perReset are what the stores read
// at most for one increment's share of a commit and for one reset, and
// perQuery what one queryInstruments reads.
func readsPaid(perIncrement, perReset, perQuery int) map[ratelimit.Budget]int {
	return map[ratelimit.Budget]int{
		ratelimit.Call:      0,                  // it pays for checking and decoding a call
		ratelimit.Increment: 1 + perIncrement,   // the counter's document, unless cached, and a share of its commit's reads
		ratelimit.Read:      2,                  // the counter's document, the caller's member document
		ratelimit.Strong:    3,                  // the counter's document, a SUM of its shards, the member document
		ratelimit.Feed:      feedReads,          // a page's documents: counters not fresh in the cache, the reader's member documents
		ratelimit.History:   historyBuckets + 2, // a bucket each, and what read pays for
		ratelimit.Top:       topReads,
		ratelimit.List:      maxListLimit + 1, // a page, and (listMembers) the counter's document
		// Owners' actions and creations read what they change: a reshard
		// merges up to every shard, a deletion (or a creation over a
		// deleted id) purges the old counter's documents, a chunk at a
		// time while the request lasts.
		ratelimit.Create:  purgeReads,
		ratelimit.Reshard: purgeReads,
		ratelimit.Reset:   1 + perReset, // the document, then as often as it changes: the document and a SUM
		ratelimit.Delete:  purgeReads,
		ratelimit.Record:  0,
		ratelimit.Query:   perQuery,
	}
}

// purgeReads bounds the documents one owner's action lists and deletes
// within a request's deadline.
const purgeReads = 100_000

// Admit spends an end user's budget for a call, before its body is read,
// and refuses a token issued before its user's erasure began.
func (core *Core) Admit(ctx context.Context, caller Caller) error {
	if err := core.allow(ctx, caller, ratelimit.Call, 1); err != nil {
		return err
	}
	return core.admitAfterErasure(ctx, caller)
}

// Package ledger keeps the accounts of one request: the reads its
// caller's budget paid for, and the Firestore documents (and
// aggregations) it read. The rule it checks is that nothing a caller sends
// makes the functions read Firestore beyond what the caller's budget paid
// for, first: a read past what was paid is unbudgeted, and the edge logs
// it as an error (an alarm, never expected) and counts it in Unbudgeted.
//
// A request without a ledger (the roll-up, reconcile, tests) and one whose
// caller has no budget (admins) are not checked.
package ledger

import (
	"context"
	"sync/atomic"
	"time"
)

// Ledger is one request's accounts; safe for concurrent use.
type Ledger struct {
	exempt     bool
	paid       atomic.Int64
	reads      atomic.Int64
	unbudgeted atomic.Int64
}

type key struct{}

// New returns ctx with a fresh ledger; exempt callers (admins) have no
// budget, so their reads are never unbudgeted.
func New(ctx context.Context, exempt bool) (context.Context, *Ledger) {
	l := &Ledger{exempt: exempt}
	return context.WithValue(ctx, key{}, l), l
}

// From returns ctx's ledger, or nil.
func From(ctx context.Context) *Ledger {
	l, _ := ctx.Value(key{}).(*Ledger)
	return l
}

// Pay books reads paid for by budget the caller spent.
func Pay(ctx context.Context, reads int) {
	if l := From(ctx); l != nil {
		l.paid.Add(int64(reads))
	}
}

// Read books n documents read (or aggregations) for the request.
func Read(ctx context.Context, n int) { From(ctx).Book(n) }

// Book books n reads made on the request's behalf elsewhere (a group
// commit's flush reads for every request in it); nil books nothing.
func (l *Ledger) Book(n int) {
	if l == nil {
		return
	}
	over := l.reads.Add(int64(n)) - l.paid.Load()
	if l.exempt || over <= 0 {
		return
	}
	over = min(over, int64(n))
	l.unbudgeted.Add(over)
	unbudgetedTotal.Add(over)
}

// Paid, Reads and Unbudgeted report the request's accounts.
func (l *Ledger) Paid() int64       { return l.paid.Load() }
func (l *Ledger) Reads() int64      { return l.reads.Load() }
func (l *Ledger) Unbudgeted() int64 { return l.unbudgeted.Load() }

var unbudgetedTotal atomic.Int64

// Unbudgeted returns the unbudgeted reads of every request of the process
// so far: 0, or a bug that lets callers make reads for free.
func Unbudgeted() int64 { return unbudgetedTotal.Load() }

type labelKey struct{}

// WithLabel returns a context whose Firestore operations are counted under
// label (e.g. "increment", "rollup"; firestoredb.Stats).
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Label is ctx's label, or "other".
func Label(ctx context.Context) string {
	if label, _ := ctx.Value(labelKey{}).(string); label != "" {
		return label
	}
	return "other"
}

// Own is ctx for one of the instance's own reads, which callers share
// and none pays for (a look the next callers count on): detached from
// ctx's cancellation, so that a caller who gives up does not waste it for
// the others; ended at deadline instead; and booked under label, exempt
// from any caller's budget.
func Own(ctx context.Context, label string, deadline time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	ctx, _ = New(WithLabel(ctx, label), true)
	return ctx, cancel
}

package erasure

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// looks is a gate's read, played by the test: each call is counted, and
// blocks until the test answers it when hold is set.
type looks struct {
	calls  int // looks
	own    int // reads of one user's record
	found  map[string]time.Time
	fail   error
	hold   chan struct{}
	inside chan struct{}
}

// latest is a read of one user's record: counted apart.
func (l *looks) latest(ctx context.Context, uid string) (time.Time, error) {
	l.own++
	return l.found[uid], l.fail
}

func (l *looks) read(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	l.calls++
	if l.hold != nil {
		l.inside <- struct{}{}
		<-l.hold
	}
	return l.found, l.fail
}

// TestTheGateLooksOncePerCheckAndNeverMakesARequestWait: within
// ERASURE_CHECK a gate answers from what it knows; past it, one request
// looks and those that come meanwhile answer from what it knew, without
// a read of their own; past the bound each looks, and a look that fails
// then refuses (503). An erasure older than a token's life is forgotten.
func TestTheGateLooksOncePerCheckAndNeverMakesARequestWait(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := &looks{found: map[string]time.Time{"ann": now.Add(-time.Minute)}}
	g := NewGate(30*time.Second, 10*time.Second, func() time.Time { return now }, l.read, l.latest)

	if b, err := g.Began(ctx, "ann"); err != nil || !b.Equal(now.Add(-time.Minute)) || l.calls != 1 {
		t.Fatalf("a cold gate: %v, %v after %d reads; want ann's erasure, one read", b, err, l.calls)
	}
	now = now.Add(29 * time.Second)
	if _, err := g.Began(ctx, "bob"); err != nil || l.calls != 1 {
		t.Fatalf("within the check: %v after %d reads; want no read", err, l.calls)
	}

	// Past the check, a look under way: another request answers from what
	// the gate knew, at once.
	now = now.Add(2 * time.Second)
	l.hold, l.inside = make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() { _, err := g.Began(ctx, "ann"); done <- err }()
	<-l.inside
	if b, err := g.Began(ctx, "ann"); err != nil || b.IsZero() || l.calls != 2 {
		t.Errorf("beside a look under way: %v, %v after %d reads; want what it knew, no read of its own", b, err, l.calls)
	}
	l.fail = errors.New("unavailable")
	close(l.hold)
	if err := <-done; err != nil {
		t.Errorf("a shared look that failed within the bound: %v; want what it knew", err)
	}
	l.hold = nil

	// Past the bound, a request that cannot look is refused.
	now = now.Add(g.Bound())
	if _, err := g.Began(ctx, "ann"); !errs.Is(err, errs.Unavailable) {
		t.Errorf("a look past the bound that failed: %v; want UNAVAILABLE", err)
	}

	// A later look forgets an erasure no token of before outlives.
	l.fail, l.found = nil, nil
	now = now.Add(TokenLife)
	if b, err := g.Began(ctx, "ann"); err != nil || !b.IsZero() {
		t.Errorf("a token's life after: %v, %v; want forgotten", b, err)
	}
}

// TestAColdGateReadsOneRecordPerRequestBesideItsLook: on a cold instance,
// the requests that come while its first look is under way read their
// own user's record, a read each, not every record of the last 65
// minutes (before, each looked for itself: a new instance under load read
// them all once per request until a look ended). A record's erasure
// counts as a look's does; a failed read refuses.
func TestAColdGateReadsOneRecordPerRequestBesideItsLook(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := &looks{found: map[string]time.Time{"ann": now.Add(-time.Minute)}, hold: make(chan struct{}), inside: make(chan struct{})}
	g := NewGate(30*time.Second, 10*time.Second, func() time.Time { return now }, l.read, l.latest)
	done := make(chan error)
	go func() { _, err := g.Began(ctx, "bob"); done <- err }()
	<-l.inside
	for range 3 {
		if b, err := g.Began(ctx, "ann"); err != nil || !b.Equal(now.Add(-time.Minute)) {
			t.Errorf("beside a cold look: %v, %v; want ann's erasure", b, err)
		}
	}
	if l.calls != 1 || l.own != 3 {
		t.Errorf("beside a cold look: %d looks and %d reads of a record; want 1 and 3", l.calls, l.own)
	}
	l.fail = errors.New("unavailable")
	if _, err := g.Began(ctx, "cy"); !errs.Is(err, errs.Unavailable) {
		t.Errorf("a record that cannot be read: %v; want UNAVAILABLE", err)
	}
	l.fail = nil
	close(l.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := g.Began(ctx, "ann"); err != nil || l.calls != 1 || l.own != 4 {
		t.Errorf("after the look: %v, %d looks, %d reads of a record; want none more", err, l.calls, l.own)
	}
}

package core

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/wire"
)

// TestATokenOfBeforeAnErasureMakesNothing: once a user's erasure began,
// every instance refuses their tokens issued before it, within
// ERASURE_CHECK, and only those: a token issued after works. The erasure
// is complete only once that holds and what those tokens sent has
// landed: its last pass then undoes a like one made in between.
func TestATokenOfBeforeAnErasureMakesNothing(t *testing.T) {
	m := newMemCore(t, map[string]string{"ERASURE_CHECK": "30s", "FIRESTORE_DEADLINE": "10s"})
	other := m.another() // another instance, which looked before the erasure
	ctx := context.Background()
	old := Caller{Function: "incrementCounter", User: "gina", Addr: "10.3.0.1", IssuedAt: m.now.Add(-time.Minute)}
	like := func(core *Core, c Caller, post string) error {
		if err := core.Admit(ctx, c); err != nil {
			return err
		}
		_, _, err := core.IncrementCounter(ctx, c, wire.IncrementCounterRequest{IncrementItem: wire.IncrementItem{CounterID: ptr("likes:" + post)}}, nil)
		return err
	}
	if err := like(other, old, "p1"); err != nil {
		t.Fatal(err)
	}
	resp, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("gina")})
	// Its record lands within FIRESTORE_DEADLINE (10 s), every instance
	// refuses within ERASURE_CHECK + FIRESTORE_DEADLINE (40 s) after, an
	// increment admitted just before waits up to FIRESTORE_DEADLINE for a
	// flush that takes up to FIRESTORE_DEADLINE, a second for clocks: 71 s.
	if err != nil || resp.Complete || resp.Counters != 1 || resp.RetryAfterSeconds != 71 {
		t.Fatalf("the erasure's first call: %+v, %v; want p1 removed, not complete, a wait of 71 s", resp, err)
	}
	if err := like(m.Core, old, "p2"); codeOf(err) != "UNAUTHENTICATED" {
		t.Errorf("the erasing instance admitted a token of before: %v", err)
	}
	if err := like(other, old, "p3"); err != nil {
		t.Errorf("another instance refused before its look was due: %v (it need not, within ERASURE_CHECK)", err)
	}
	m.advance(31 * time.Second)
	if err := like(other, old, "p4"); codeOf(err) != "UNAUTHENTICATED" {
		t.Errorf("another instance admitted a token of before past ERASURE_CHECK: %v", err)
	}
	fresh := old
	fresh.IssuedAt = m.now
	if err := like(other, fresh, "p5"); err != nil {
		t.Errorf("a token issued after the erasure began: %v", err)
	}
	m.advance(10 * time.Second)
	early, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("gina"), PageToken: &resp.NextPageToken})
	if err != nil || early.Complete || early.Counters != 0 || early.RetryAfterSeconds != 30 || early.NextPageToken == "" {
		t.Fatalf("a call sooner than told: %+v, %v; want nothing done, not complete, a wait of the 30 s left", early, err)
	}
	m.advance(30 * time.Second)
	resp, err = m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("gina"), PageToken: &early.NextPageToken})
	if err != nil || !resp.Complete || resp.Counters != 2 {
		t.Fatalf("the last pass: %+v, %v; want complete, p3 (an old token's like in between) and p5 (after it began) removed", resp, err)
	}
	for _, post := range []string{"p1", "p2", "p3", "p4", "p5"} {
		got, err := m.GetCounter(ctx, user, wire.GetCounterRequest{CounterID: ptr("likes:" + post), Consistency: ptr("strong")})
		if err != nil || got.Count != 0 {
			t.Errorf("likes:%s after the erasure: %+v, %v", post, got, err)
		}
	}
}

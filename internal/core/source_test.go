package core

import (
	"context"
	"sync"
	"testing"

	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/wire"
)

// opsSeen records the ops each commit is given.
type opsSeen struct {
	Increments
	mu  sync.Mutex
	ops []increment.Op
}

func (s *opsSeen) Apply(ctx context.Context, id string, ops []increment.Op) []increment.Result {
	s.mu.Lock()
	s.ops = append(s.ops, ops...)
	s.mu.Unlock()
	return s.Increments.Apply(ctx, id, ops)
}

// TestOnlyAnErasuresItemsPlayLast: eraseMember's −1s are marked to play
// last in their commit (increment.Op.Erase), and no client's increment
// is, alone or in a list: one would undo the like beside it.
func TestOnlyAnErasuresItemsPlayLast(t *testing.T) {
	m := newMemCore(t, nil)
	seen := &opsSeen{Increments: m.increments}
	m.increments = seen
	ctx := context.Background()
	taken := func(what string, want bool) {
		t.Helper()
		seen.mu.Lock()
		defer seen.mu.Unlock()
		if len(seen.ops) == 0 {
			t.Fatalf("%s: no op committed", what)
		}
		for _, op := range seen.ops {
			if op.Erase != want {
				t.Errorf("%s: an op with Erase %v, want %v", what, op.Erase, want)
			}
		}
		seen.ops = nil
	}
	if _, _, err := m.IncrementCounter(ctx, user, wire.IncrementCounterRequest{IncrementItem: wire.IncrementItem{CounterID: ptr("likes:p1")}}, nil); err != nil {
		t.Fatal(err)
	}
	taken("one like", false)
	items := wire.Items{{CounterID: ptr("likes:p2")}, {CounterID: ptr("likes:p3")}}
	if _, list, err := m.IncrementCounter(ctx, user, wire.IncrementCounterRequest{Increments: items}, nil); err != nil || list[0].Err != nil || list[1].Err != nil {
		t.Fatal(err, list)
	}
	taken("a list of likes", false)
	if _, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr(user.User)}); err != nil {
		t.Fatal(err)
	}
	taken("an erasure", true)
}

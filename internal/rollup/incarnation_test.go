package rollup

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/logging"
)

// claimCounter is a Store that holds one live counter and records the
// slots claimed for it; nothing else is called in these cases.
type claimCounter struct {
	Store
	live   counter.Counter
	claims int
}

func (s *claimCounter) Live(context.Context, string) (counter.Counter, error) { return s.live, nil }

func (s *claimCounter) ClaimSlot(context.Context, string, time.Time, string) (string, error) {
	s.claims++
	return "another event", nil // a holder elsewhere: Include returns at once
}

// TestThePurgeOfAnEarlierIncarnationClaimsNoSlot: creating an id again
// purges the shards its previous counter left, and their deletion events
// may arrive once the new counter exists. Before, each claimed a roll-up
// slot under the new counter (e2e's TestCreateAfterDeleteStartsAtZero
// found one left, now and then). A shard of the live counter deleted (by
// hand) still rolls up.
func TestThePurgeOfAnEarlierIncarnationClaimsNoSlot(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	ctx := logging.NewContext(context.Background(), quiet)
	for _, tc := range []struct {
		name       string
		lastWrite  time.Time // the deleted shard's, from its old document
		wantClaims int
	}{
		{"a shard of the earlier counter", created.Add(-5 * time.Second), 0},
		{"a shard of the live counter", created.Add(time.Second), 1},
		{"a deletion whose old document is unknown", time.Time{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &claimCounter{live: counter.Counter{ID: "c", NumShards: 1, CreatedAt: created, AsOf: created}}
			r := New(s, Options{Cadence: time.Second, Now: func() time.Time { return created.Add(2 * time.Second) }})
			// The emulator's deletion time is cut to the second, then
			// rounded up (fsevent.WrittenAt): after the creation either way.
			ev := Event{ID: "e", CounterID: "c", WrittenAt: created.Add(2 * time.Second), Deleted: true, LastWrittenAt: tc.lastWrite}
			if err := r.Include(ctx, ev); err != nil {
				t.Fatal(err)
			}
			if s.claims != tc.wantClaims {
				t.Fatalf("%d slots claimed, want %d", s.claims, tc.wantClaims)
			}
		})
	}
}

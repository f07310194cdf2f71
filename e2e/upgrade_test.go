package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// TestCountersOfAnEarlierVersionAreUpgraded: a counter document written
// before origins and rankings (no origin, no ranked) would drop out of
// every ranking, which shows ranked counters only. Reconcile writes the
// two fields, even when the total is right: an admin's counter (no owner)
// is ranked, a user's is not.
func TestCountersOfAnEarlierVersionAreUpgraded(t *testing.T) {
	t.Parallel()
	fs := testenv.Firestore(t, project)
	ctx := context.Background()
	for owner, ranked := range map[string]bool{"": true, "user-1": false} {
		id := newCounterID(t) + owner
		if _, err := fs.Doc("counters/"+id).Set(ctx, map[string]any{"num_shards": 2, "count": 7, "rollups": 1, "owner": owner}); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Doc("counters/"+id+"/shards/1").Set(ctx, map[string]any{"count": 7, "commits": 1, "slow": 0}); err != nil {
			t.Fatal(err)
		}
		if r := testenv.Do(t, "POST", url("reconcileCounters"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
			t.Fatalf("reconcile: %s", r)
		}
		snap, err := fs.Doc("counters/" + id).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantOrigin := map[bool]string{true: "admin", false: "user"}[ranked]
		if d := snap.Data(); d["origin"] != wantOrigin || d["ranked"] != ranked || d["count"] != int64(7) {
			t.Errorf("owner %q: after reconcile origin=%v ranked=%v count=%v, want %s, %v, 7", owner, d["origin"], d["ranked"], d["count"], wantOrigin, ranked)
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// TestCorruptCounterDocumentIsDataLoss: a counter document written outside
// the functions without a usable num_shards used to make the group
// commit's goroutine panic (rand.IntN(0)) and take the whole instance down.
// Now it is DATA_LOSS for its own requests, the instance serves others, and
// its roll-up events are acknowledged (a retry cannot help) and logged.
func TestCorruptCounterDocumentIsDataLoss(t *testing.T) {
	t.Parallel()
	fs := testenv.Firestore(t, project)
	bad, good := newCounterID(t), newCounterID(t)
	createCounter(t, good, 2)
	if _, err := fs.Doc("counters/"+bad).Set(context.Background(), map[string]any{"num_shards": 0, "count": 0}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, bad))
		if r.Status != http.StatusInternalServerError || r.ErrorCode() != "DATA_LOSS" {
			t.Fatalf("increment of a corrupt counter: %s, want 500 DATA_LOSS", r)
		}
	}
	if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, good)); r.Status != http.StatusOK {
		t.Fatalf("another counter after it: %s", r)
	}
	// A shard of it written by hand: its event is acknowledged, not
	// redelivered for a day.
	if _, err := fs.Doc("counters/"+bad+"/shards/0").Set(context.Background(), map[string]any{"count": 1}); err != nil {
		t.Fatal(err)
	}
	req := testenv.ShardEvent(t, url("rollupCounter"), project, bad, 0, 1, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("roll-up event of a corrupt counter: %d, want 204", resp.StatusCode)
	}
	if len(logs.Await(map[string]any{"severity": "ERROR", "counter_id": bad, "message": "acknowledging an event whose counter cannot roll up"})) == 0 {
		t.Errorf("no ERROR line for the corrupt counter's event")
	}
}

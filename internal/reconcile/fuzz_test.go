package reconcile

import (
	"testing"

	"github.com/shardcount/shardcount/internal/httpapi"
)

// FuzzReconcileRequest: no body may panic the decoding of
// reconcileCounters, or be refused with a 5xx (internal/core's fuzz
// targets say why).
func FuzzReconcileRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b ReconcileRequest
		if err := httpapi.Unmarshal(body, &b); err != nil && httpapi.Status(err) >= 500 {
			t.Fatalf("status %d for a bad request: %v", httpapi.Status(err), err)
		}
	})
}

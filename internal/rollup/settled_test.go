package rollup

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardcount/shardcount/internal/errs"
)

// TestSettled pins the receiver's mapping (service's rollupCounter answers
// 204 exactly when Settled): only a done roll-up, a deleted counter, an
// unusable event and a counter whose data can never roll up are done with.
func TestSettled(t *testing.T) {
	cause := errors.New("cause")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"done", nil, true},
		{"deleted counter", errs.New(errs.NotFound, "gone"), true},
		{"unusable event", errs.New(errs.InvalidArgument, "not a shard"), true},
		{"corrupt counter", errs.New(errs.DataLoss, "sum past int64"), true},
		{"transient", errs.Retryable(cause, 0, "retry"), false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{"cancelled", context.Canceled, false},
		{"permission denied (unclassified)", fmt.Errorf("firestoredb: commit: rpc error: code = PermissionDenied"), false},
		{"merge gave up", errs.Wrap(errs.FailedPrecondition, cause, "merge"), false},
		{"internal", errs.Wrap(errs.Internal, cause, "bug"), false},
	} {
		if got := Settled(tc.err); got != tc.want {
			t.Errorf("%s: Settled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

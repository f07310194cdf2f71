package firestoredb_test

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// TestAMissingIndexIsRetryable: deployed, a query whose index is still
// building (an upgrade's new one, created after the functions) fails
// FAILED_PRECONDITION "The query requires an index"; the emulator needs no
// index and never answers so, hence the error made here, in Firestore's
// words. It is a 503 with a wait, not a 500; a commit's failed
// precondition stays what it was.
func TestAMissingIndexIsRetryable(t *testing.T) {
	missing := status.Error(codes.FailedPrecondition, "The query requires an index. You can create it here: https://console.firebase.google.com/…")
	var e *errs.Error
	if err := fs.Classify(missing, "rank counters"); !errors.As(err, &e) || e.Code != errs.Unavailable || e.RetryAfter != fs.IndexRetryAfter {
		t.Errorf("a missing index: %v, want UNAVAILABLE after %s", err, fs.IndexRetryAfter)
	}
	raced := status.Error(codes.FailedPrecondition, "the stored version does not match the required base version")
	if err := fs.Classify(raced, "commit"); errs.CodeOf(err) == errs.Unavailable {
		t.Errorf("a failed commit precondition: %v, want it unchanged", err)
	}
}

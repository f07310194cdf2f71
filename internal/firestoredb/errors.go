package firestoredb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/internal/errs"
)

// Code returns the gRPC code of a Firestore error.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return codes.DeadlineExceeded
	}
	if errors.Is(err, context.Canceled) {
		return codes.Canceled
	}
	return status.Code(err)
}

// RetryAfter is what a client is told to wait after a transient failure.
const RetryAfter = time.Second

// Classify turns a Firestore failure into the errs vocabulary: a failure a
// retry can fix (unavailable, overloaded, contended, too slow for the
// request's deadline, cancelled) is UNAVAILABLE; anything else is an
// internal error prefixed with what failed.
func Classify(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*errs.Error](err); ok {
		return err
	}
	countFailure(Code(err))
	switch Code(err) {
	case codes.DeadlineExceeded:
		return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), RetryAfter, "Firestore did not answer within the deadline; retry shortly")
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Canceled, codes.Internal, codes.Unknown,
		codes.Unauthenticated: // also what gRPC says when fetching an access token failed
		return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), RetryAfter, "Firestore is unavailable or busy; retry shortly")
	case codes.FailedPrecondition:
		if MissingIndex(err) { // an upgrade's new index, still building after the deploy
			return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), IndexRetryAfter,
				"a Firestore index this needs is not built yet (scripts/deploy.sh creates them, building takes minutes); retry later")
		}
	}
	return fmt.Errorf("firestoredb: %s: %w", what, err)
}

// IndexRetryAfter is what a client is told to wait while an index is
// built.
const IndexRetryAfter = time.Minute

// MissingIndex reports whether err is Firestore refusing a query for an
// index it lacks (FAILED_PRECONDITION, "The query requires an index").
func MissingIndex(err error) bool {
	return Code(err) == codes.FailedPrecondition && strings.Contains(status.Convert(err).Message(), "requires an index")
}

// Raced is the error an attempt of retry.Raced returns when its commit's
// precondition failed (Raced(err) reports whether err says so): what it
// read changed meanwhile, and reading it again may succeed.
func Raced(err error) bool {
	switch Code(err) {
	case codes.FailedPrecondition, codes.AlreadyExists:
		return true
	}
	return false
}

// LandsBy is the latest a commit sent now under ctx may land: its
// deadline (Firestore applies nothing past a call's deadline: gRPC sends
// it the time left, so its clock may run a little past ours, which the
// late-write windows' second of slack covers), or, without one, as late
// as the longest FIRESTORE_DEADLINE allows.
func LandsBy(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return later(d, now)
	}
	return now.Add(NoDeadline)
}

// NoDeadline is how long a call without a deadline is taken to be able to
// land: the longest FIRESTORE_DEADLINE.
const NoDeadline = 5 * time.Minute

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

package firestoredb

import (
	"context"
	"errors"
	"fmt"
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
	}
	return fmt.Errorf("firestoredb: %s: %w", what, err)
}

// MaxAttempts bounds the attempts of Retry: each one after the first
// follows a change, by another instance, of what the attempt before read.
// That many in a row means something keeps rewriting it.
const MaxAttempts = 5

// Raced is the error an attempt of Retry returns when its commit's
// precondition failed (Raced(err) reports whether err says so): what it
// read changed meanwhile, and reading it again may succeed.
func Raced(err error) bool {
	switch Code(err) {
	case codes.FailedPrecondition, codes.AlreadyExists:
		return true
	}
	return false
}

// Retry is the one loop of a read-check-commit: attempt reads what its
// commit depends on, and commits on the condition that it did not change;
// when it did (attempt reports raced), Retry runs it again, at most
// MaxAttempts times in all, then answers UNAVAILABLE naming what. try
// counts the attempts from 1. Any other outcome, an error or not, ends the
// loop.
func Retry(what string, attempt func(try int) (raced bool, err error)) error {
	for try := 1; try <= MaxAttempts; try++ {
		raced, err := attempt(try)
		if !raced {
			return err
		}
	}
	return errs.Retryable(nil, RetryAfter, "%s keeps changing; retry", what)
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

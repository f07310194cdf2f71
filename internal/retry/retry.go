// Package retry is the one loop of a read-check-commit, for the stores
// and for the roll-up's reconcile alike: read what a commit depends on,
// commit on the condition that it did not change, and when it did, read
// again, a bounded number of times.
package retry

import (
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// MaxAttempts bounds the attempts of Raced: each one after the first
// follows a change, by another instance, of what the attempt before read.
// That many in a row means something keeps rewriting it.
const MaxAttempts = 5

// After is what a client is told to wait when the attempts ran out.
const After = time.Second

// Raced runs attempt until it reports no race, at most MaxAttempts times
// in all, then answers UNAVAILABLE naming what. try counts the attempts
// from 1. Any other outcome, an error or not, ends the loop. It does not
// wait between attempts: a race is lost to a commit that already landed,
// so reading again at once sees it.
func Raced(what string, attempt func(try int) (raced bool, err error)) error {
	for try := 1; try <= MaxAttempts; try++ {
		raced, err := attempt(try)
		if !raced {
			return err
		}
	}
	return errs.Retryable(nil, After, "%s keeps changing; retry", what)
}

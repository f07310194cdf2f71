package loadtest

import (
	"context"
	"math/rand/v2"
	"net/http"
)

// Strider hands each worker its own users in turn (worker w plays users
// w, w+workers, …), so a user's actions are one worker's, in order, and
// every user's last action is known at the end.
type Strider struct {
	users, workers int
	next           []int // each worker's next user, in its stride
}

func NewStrider(users, workers int) *Strider {
	return &Strider{users: users, workers: workers, next: make([]int, workers)}
}

// User is worker's next user.
func (s *Strider) User(worker int) int {
	u := worker + s.next[worker]*s.workers
	if u >= s.users {
		s.next[worker], u = 0, worker
	}
	s.next[worker]++
	return u
}

// Tap does one user action as an app does: sent once, or a fifth of the
// time twice (a double tap: the second, with a key of its own, changes
// nothing), each send retried with its key until its answer is definite.
// It returns the last answer.
func Tap(ctx context.Context, key string, send func(key string) Outcome) Outcome {
	presses := 1
	if rand.IntN(5) == 0 {
		presses = 2
	}
	var out Outcome
	for range presses {
		if out = UntilDefinite(ctx, func() Outcome { return send(key) }); !out.OK {
			return out // the user's state is unknown: the check will say so
		}
		key += "-again"
	}
	return out
}

// UntilDefinite sends until the answer is definite: acknowledged, refused
// for good (a 4xx other than 429), or the run is cancelled; a retry with
// the same key counts once.
func UntilDefinite(ctx context.Context, send func() Outcome) Outcome {
	for attempt := 0; ; attempt++ {
		out := send()
		if out.OK || ctx.Err() != nil || attempt > 50 || out.Status >= 400 && out.Status < 500 && out.Status != http.StatusTooManyRequests {
			return out
		}
	}
}

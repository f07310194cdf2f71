package groupcommit

import (
	"time"

	"go.opentelemetry.io/otel/trace"
)

// state is the bookkeeping of a Batcher, with no goroutines and no time, so
// a test can drive it through any interleaving. Its caller holds the
// Batcher's lock.
type state[T, R any] struct {
	maxBatch int
	queues   map[string]*queue[T, R]
}

type queue[T, R any] struct {
	waiting []*unit[T, R]
	// full, when set, is closed once a full batch waits: it wakes a drain
	// that waits for company.
	full chan struct{}
	// busy is true while a drain runs for the key: a flush is in flight,
	// or about to start.
	busy bool
}

type unit[T, R any] struct {
	items  []T
	done   chan done[R] // buffered: a flush never blocks on a caller that left
	at     time.Time
	taken  bool
	caller trace.SpanContext // the request's span, which the flush's span links to
}

// done is a unit's outcome: its results, or the flush's panic, and the
// flush's span, which the request's span links to.
type done[R any] struct {
	results []R
	err     error
	flush   trace.SpanContext
}

func newState[T, R any](maxBatch int) state[T, R] {
	return state[T, R]{maxBatch: maxBatch, queues: map[string]*queue[T, R]{}}
}

// submit queues u; it reports whether the key was idle, so the caller must
// start a drain.
func (s *state[T, R]) submit(key string, u *unit[T, R]) bool {
	q := s.queues[key]
	if q == nil {
		q = &queue[T, R]{}
		s.queues[key] = q
	}
	q.waiting = append(q.waiting, u)
	if q.full != nil && q.queued() >= s.maxBatch {
		close(q.full)
		q.full = nil
	}
	if q.busy {
		return false
	}
	q.busy = true
	return true
}

// cancel removes u if no flush took it yet, and reports whether it did.
func (s *state[T, R]) cancel(key string, u *unit[T, R]) bool {
	q := s.queues[key]
	if q == nil || u.taken {
		return false
	}
	for i, w := range q.waiting {
		if w == u {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// take returns the next batch of key: whole units in arrival order, at most
// maxBatch items. When none is waiting it marks the key idle (forgetting
// it) and returns nil; the drain then ends.
func (s *state[T, R]) take(key string) []*unit[T, R] {
	q := s.queues[key]
	if len(q.waiting) == 0 {
		delete(s.queues, key)
		return nil
	}
	n, items := 0, 0
	for n < len(q.waiting) && items+len(q.waiting[n].items) <= s.maxBatch {
		items += len(q.waiting[n].items)
		n++
	}
	batch := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	for _, u := range batch {
		u.taken = true
	}
	return batch
}

// oldest returns when key's oldest waiting unit arrived, and how many items
// wait.
func (s *state[T, R]) oldest(key string) (time.Time, int) {
	q := s.queues[key]
	if q == nil || len(q.waiting) == 0 {
		return time.Time{}, 0
	}
	return q.waiting[0].at, q.queued()
}

// queued returns how many items wait.
func (q *queue[T, R]) queued() int {
	n := 0
	for _, u := range q.waiting {
		n += len(u.items)
	}
	return n
}

// whenFull returns a channel that is closed once key has a full batch
// waiting.
func (s *state[T, R]) whenFull(key string) <-chan struct{} {
	q := s.queues[key]
	if q.full == nil {
		q.full = make(chan struct{})
	}
	return q.full
}

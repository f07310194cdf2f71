// Package groupcommit gathers concurrent work on the same key into shared
// flushes, leader/follower style: while a flush of a key is in flight,
// requests for that key queue, and the next flush takes them together.
// An idle key adds no latency: its first request flushes at once.
//
// With a maximum wait, a batch is instead flushed when it is full or when
// its oldest item has waited that long, whichever comes first: the classic
// group-commit window. Under a steady load it also paces a key's flushes
// to about one per maximum wait.
//
// incrementCounter uses it so that the concurrent increments of one hot
// counter in one instance share a Firestore commit.
//
// The rules, which the simulation test checks over thousands of seeded
// schedules (state.go holds them, free of goroutines and time):
//
//   - A unit (the items of one request) is flushed whole, once, or not at
//     all; units over MaxBatch are split into units of MaxBatch first.
//   - A flush holds at most MaxBatch items, in arrival order.
//   - A key has at most one flush in flight.
//   - A unit whose caller gives up before a flush takes it is never
//     flushed; one already taken is flushed for the others' sake.
package groupcommit

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry: a span per flush, and how many items flushes carry
// (docs/operations/observability.md). No-ops until a provider is set.
var (
	tracer     = otel.Tracer("github.com/shardcount/shardcount/internal/groupcommit")
	meter      = otel.Meter("github.com/shardcount/shardcount/internal/groupcommit")
	flushes, _ = meter.Int64Counter("shardcount.groupcommit.flushes", metric.WithUnit("{flush}"),
		metric.WithDescription("Shared commits (flushes) of group commit"))
	batchItems, _ = meter.Int64Histogram("shardcount.groupcommit.items", metric.WithUnit("{item}"),
		metric.WithDescription("Items (increments, likes) per flush"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 250, 500))
)

// Batcher runs flush on the queued units of each key.
type Batcher[T, R any] struct {
	// flush applies items of key and returns one result per item. Its
	// context carries the flush's span and nothing of any caller's: callers
	// may be gone.
	flush    func(ctx context.Context, key string, items []T) []R
	maxBatch int
	maxWait  time.Duration

	mu    sync.Mutex
	state state[T, R]
}

// New returns a Batcher flushing at most maxBatch items at once, waiting up
// to maxWait for more before a flush that would start from idle.
func New[T, R any](maxBatch int, maxWait time.Duration, flush func(ctx context.Context, key string, items []T) []R) *Batcher[T, R] {
	return &Batcher[T, R]{flush: flush, maxBatch: max(1, maxBatch), maxWait: maxWait, state: newState[T, R](max(1, maxBatch))}
}

// Do queues items for key and returns their results in order, once the
// flush holding them is done. If ctx ends first, Do returns its error:
// items not yet taken by a flush are then never flushed, and items taken
// are flushed but their results dropped.
func (b *Batcher[T, R]) Do(ctx context.Context, key string, items []T) ([]R, error) {
	var units []*unit[T, R]
	now := time.Now()
	span := trace.SpanFromContext(ctx)
	for start := 0; start < len(items); start += b.maxBatch {
		units = append(units, &unit[T, R]{items: items[start:min(start+b.maxBatch, len(items))], done: make(chan done[R], 1), at: now,
			caller: span.SpanContext()})
	}
	b.mu.Lock()
	var start bool
	for _, u := range units {
		start = b.state.submit(key, u) || start
	}
	b.mu.Unlock()
	if start {
		go b.drain(key)
	}

	out := make([]R, 0, len(items))
	for i, u := range units {
		select {
		case d := <-u.done:
			if d.flush.IsValid() {
				span.AddLink(trace.Link{SpanContext: d.flush}) // the commit that carried this request
			}
			if d.err != nil {
				return nil, d.err
			}
			out = append(out, d.results...)
		case <-ctx.Done():
			b.mu.Lock()
			for _, v := range units[i:] {
				b.state.cancel(key, v)
			}
			b.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// drain flushes key's queue until it is empty; one runs per busy key.
func (b *Batcher[T, R]) drain(key string) {
	for {
		if b.maxWait > 0 {
			b.waitForCompany(key)
		}
		b.mu.Lock()
		batch := b.state.take(key)
		b.mu.Unlock()
		if batch == nil {
			return // take marked the key idle
		}
		var items []T
		var parent trace.SpanContext
		var links []trace.Link
		for _, u := range batch {
			items = append(items, u.items...)
			switch {
			case !u.caller.IsValid():
			case !parent.IsSampled():
				parent = u.caller
			case u.caller.IsSampled():
				links = append(links, trace.Link{SpanContext: u.caller})
			}
		}
		// The flush's own span, in the trace of the first sampled request
		// it carries (so it is sampled with it), linked to the other
		// sampled ones (they may have other traces; an unsampled one's span
		// is not exported); each request links back to it. Its context
		// holds nothing of any caller's but the parent's ids.
		ctx := trace.ContextWithSpanContext(context.Background(), parent)
		ctx, span := tracer.Start(ctx, "groupcommit.flush", trace.WithLinks(links...),
			trace.WithAttributes(attribute.Int("groupcommit.items", len(items)), attribute.Int("groupcommit.requests", len(batch))))
		flushes.Add(ctx, 1)
		batchItems.Record(ctx, int64(len(items)))
		results, err := b.safeFlush(ctx, key, items)
		span.End()
		for _, u := range batch {
			if err != nil {
				u.done <- done[R]{err: err, flush: span.SpanContext()}
				continue
			}
			u.done <- done[R]{results: results[:len(u.items)], flush: span.SpanContext()}
			results = results[len(u.items):]
		}
	}
}

// PanicError is what Do returns to every caller of a flush that panicked:
// a bug. The drain goes on with the next batch.
type PanicError struct {
	Key   string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("groupcommit: the flush of %q panicked: %v", e.Key, e.Value)
}

// safeFlush runs flush, turning a panic into a *PanicError: in the drain's
// goroutine a panic would otherwise end the whole process, every other
// request of the instance with it.
func (b *Batcher[T, R]) safeFlush(ctx context.Context, key string, items []T) (results []R, err error) {
	defer func() {
		if p := recover(); p != nil {
			results, err = nil, &PanicError{Key: key, Value: p, Stack: debug.Stack()}
		}
	}()
	results = b.flush(ctx, key, items)
	if len(results) != len(items) {
		return nil, &PanicError{Key: key, Value: fmt.Sprintf("flush returned %d results for %d items", len(results), len(items))}
	}
	return results, nil
}

// waitForCompany returns when key's oldest waiting item has waited
// maxWait, or a full batch waits.
func (b *Batcher[T, R]) waitForCompany(key string) {
	for {
		b.mu.Lock()
		oldest, queued := b.state.oldest(key)
		wait := time.Until(oldest.Add(b.maxWait))
		if queued == 0 || queued >= b.maxBatch || wait <= 0 {
			b.mu.Unlock()
			return
		}
		full := b.state.whenFull(key)
		b.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-full:
		}
		timer.Stop()
	}
}

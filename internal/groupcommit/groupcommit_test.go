package groupcommit

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	seedFlag = flag.Uint64("seed", 0, "replay only this simulation seed")
	simsFlag = flag.Int("sims", 3000, "random schedules TestSimulation runs")
)

// TestSimulation drives the Batcher's state through seeded random
// interleavings of submits, cancellations, drains taking batches and
// flushes completing, on a few keys, and checks the rules of the package
// comment after every step. A failure prints its seed;
// go test ./internal/groupcommit -run TestSimulation -seed N replays it.
func TestSimulation(t *testing.T) {
	seeds := []uint64{*seedFlag}
	if *seedFlag == 0 {
		seeds = seeds[:0]
		for i := range *simsFlag {
			seeds = append(seeds, uint64(i+1))
		}
	}
	failed := 0
	for _, seed := range seeds {
		if err := simulate(seed); err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("seed %d (replay: go test ./internal/groupcommit -run TestSimulation -seed %d): %v", seed, seed, err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d schedules failed", failed, len(seeds))
	}
}

type simUnit struct {
	*unit[int, int]
	key       string
	seq       int
	cancelled bool // cancel reported it removed
	flushes   int
}

func simulate(seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0))
	maxBatch := 1 + rng.IntN(8)
	s := newState[int, int](maxBatch)
	keys := []string{"a", "b", "c"}[:1+rng.IntN(3)]
	draining := map[string]bool{}       // a drain runs for the key
	inFlight := map[string][]*simUnit{} // its flush, if one is in flight
	byUnit := map[*unit[int, int]]*simUnit{}
	var all []*simUnit
	lastFlushed := map[string]int{} // seq of the last unit flushed, per key

	check := func() error {
		for _, k := range keys {
			q := s.queues[k]
			if draining[k] != (q != nil && q.busy) {
				return fmt.Errorf("key %s: drain running %v, state busy %v", k, draining[k], q != nil && q.busy)
			}
		}
		return nil
	}
	steps := 50 + rng.IntN(200)
	for step := 0; ; step++ {
		quiet := step >= steps // no new work: let everything finish
		var pending []*simUnit
		for _, u := range all {
			if !u.cancelled && !u.taken {
				pending = append(pending, u)
			}
		}
		if quiet && len(pending) == 0 && len(inFlight) == 0 && len(draining) == 0 {
			break
		}
		if step > steps+10_000 {
			return fmt.Errorf("never went quiet")
		}
		switch op := rng.IntN(4); {
		case op == 0 && !quiet: // a request arrives
			k := keys[rng.IntN(len(keys))]
			u := &simUnit{unit: &unit[int, int]{items: make([]int, 1+rng.IntN(maxBatch))}, key: k, seq: len(all)}
			all = append(all, u)
			byUnit[u.unit] = u
			idle := !draining[k]
			start := s.submit(k, u.unit)
			if start != idle {
				return fmt.Errorf("submit to %s: start=%v, key idle=%v (an idle key must flush at once, a busy one must queue)", k, start, idle)
			}
			if start {
				draining[k] = true
			}
		case op == 1 && !quiet && len(all) > 0: // a caller gives up
			u := all[rng.IntN(len(all))]
			if u.cancelled {
				continue
			}
			removed := s.cancel(u.key, u.unit)
			if removed && u.taken {
				return fmt.Errorf("unit %d removed after a flush took it", u.seq)
			}
			if !removed && !u.taken {
				return fmt.Errorf("unit %d not removed though no flush took it", u.seq)
			}
			u.cancelled = removed
		case op == 2: // a drain with nothing in flight takes a batch
			for _, k := range keys {
				if !draining[k] || inFlight[k] != nil {
					continue
				}
				batch := s.take(k)
				if batch == nil {
					delete(draining, k)
					continue
				}
				items := 0
				for _, bu := range batch {
					u := byUnit[bu]
					items += len(u.items)
					u.flushes++
					if u.cancelled || u.flushes > 1 || u.key != k {
						return fmt.Errorf("unit %d flushed (cancelled %v, flushes %d, key %s in %s)", u.seq, u.cancelled, u.flushes, u.key, k)
					}
					if u.seq < lastFlushed[k] {
						return fmt.Errorf("unit %d flushed after unit %d: not in arrival order", u.seq, lastFlushed[k])
					}
					lastFlushed[k] = u.seq
					inFlight[k] = append(inFlight[k], u)
				}
				if items > maxBatch {
					return fmt.Errorf("a flush of %d items, over %d", items, maxBatch)
				}
				break
			}
		default: // a flush completes
			for _, k := range keys {
				if inFlight[k] != nil {
					delete(inFlight, k)
					break
				}
			}
		}
		if err := check(); err != nil {
			return err
		}
	}
	for _, u := range all {
		if !u.cancelled && u.flushes != 1 {
			return fmt.Errorf("unit %d was flushed %d times", u.seq, u.flushes)
		}
	}
	if len(s.queues) != 0 {
		return fmt.Errorf("keys left busy after everything finished: %v", s.queues)
	}
	return nil
}

// TestBatcherSharesFlushes runs real goroutines against the Batcher: many
// concurrent callers of one key share flushes, each gets its own results,
// and no flush holds more than the maximum.
func TestBatcherSharesFlushes(t *testing.T) {
	var flushes, biggest atomic.Int64
	b := New(16, 0, func(_ context.Context, key string, items []int) []int {
		flushes.Add(1)
		if n := int64(len(items)); n > biggest.Load() {
			biggest.Store(n)
		}
		time.Sleep(2 * time.Millisecond) // a commit
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 10
		}
		return out
	})
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			items := []int{i, i + 1}
			got, err := b.Do(context.Background(), "hot", items)
			if err != nil || !slices.Equal(got, []int{i * 10, (i + 1) * 10}) {
				t.Errorf("caller %d: %v %v", i, got, err)
			}
		})
	}
	wg.Wait()
	if n := flushes.Load(); n >= 400 || n < 400*2/16 {
		t.Errorf("%d flushes for 400 callers: want them shared, 16 items at most each", n)
	}
	if biggest.Load() > 16 {
		t.Errorf("a flush of %d items", biggest.Load())
	}
	t.Logf("400 callers, %d flushes", flushes.Load())
}

// TestIdleKeyFlushesAtOnce: with no wait configured, a lone request is not
// delayed.
func TestIdleKeyFlushesAtOnce(t *testing.T) {
	b := New(100, 0, func(context.Context, string, []int) []int { return []int{1} })
	start := time.Now()
	if _, err := b.Do(context.Background(), "k", []int{1}); err != nil || time.Since(start) > 50*time.Millisecond {
		t.Errorf("took %s, err %v", time.Since(start), err)
	}
}

// TestCancelledCallerDoesNotAffectOthers: a caller that leaves while its
// unit waits is never flushed; the flush in flight and the others finish.
func TestCancelledCallerDoesNotAffectOthers(t *testing.T) {
	release := make(chan struct{})
	var flushed sync.Map
	b := New(10, 0, func(_ context.Context, _ string, items []int) []int {
		for _, v := range items {
			flushed.Store(v, true)
		}
		<-release
		return items
	})
	first := make(chan error, 1)
	go func() { _, err := b.Do(context.Background(), "k", []int{1}); first <- err }()
	for { // wait until the first flush is in flight
		if _, ok := flushed.Load(1); ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { _, err := b.Do(ctx, "k", []int{2}); gone <- err }()
	third := make(chan []int, 1)
	go func() { r, _ := b.Do(context.Background(), "k", []int{3}); third <- r }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-gone; err != context.Canceled {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if r := <-third; !slices.Equal(r, []int{3}) {
		t.Fatalf("third caller got %v", r)
	}
	if _, ok := flushed.Load(2); ok {
		t.Error("the cancelled caller's item was flushed")
	}
}

// TestMaxWaitPacesAHotKey: with a maximum wait, a key under steady load
// flushes about once per wait, in bigger batches, instead of as fast as
// flushes return.
func TestMaxWaitPacesAHotKey(t *testing.T) {
	var flushes atomic.Int64
	b := New(1000, 5*time.Millisecond, func(_ context.Context, _ string, items []int) []int {
		flushes.Add(1)
		return items
	})
	stop := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	var calls atomic.Int64
	for range 16 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				b.Do(context.Background(), "hot", []int{1})
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	// 300 ms at one flush per 5 ms is about 60; without pacing, thousands.
	if n := flushes.Load(); n > 90 || n < 20 {
		t.Errorf("%d flushes for %d calls in 300 ms with a 5 ms wait, want about 60", n, calls.Load())
	}
	t.Logf("%d calls, %d flushes", calls.Load(), flushes.Load())
}

// TestFullBatchEndsTheWait: a maximum wait is a bound, not a pace: a batch
// that fills up flushes at once.
func TestFullBatchEndsTheWait(t *testing.T) {
	b := New(4, time.Minute, func(_ context.Context, _ string, items []int) []int { return items })
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if got, err := b.Do(context.Background(), "k", []int{i}); err != nil || !slices.Equal(got, []int{i}) {
				t.Errorf("caller %d: %v %v", i, got, err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a full batch waited %s of its one-minute window", d)
	}
}

// TestPanickingFlushFailsItsBatchOnly: a flush that panics (a bug) fails
// the callers of that batch with a *PanicError and its stack; the process
// lives on and the key's next batch flushes normally.
func TestPanickingFlushFailsItsBatchOnly(t *testing.T) {
	b := New(10, 0, func(_ context.Context, key string, items []int) []int {
		if items[0] < 0 {
			var shards []int
			_ = shards[items[0]+len(shards)] // index out of range, like rand.IntN(0)
		}
		return items
	})
	_, err := b.Do(context.Background(), "k", []int{-1})
	pe, ok := err.(*PanicError)
	if !ok || pe.Key != "k" || len(pe.Stack) == 0 {
		t.Fatalf("Do of a panicking flush: %v, want a *PanicError with its stack", err)
	}
	got, err := b.Do(context.Background(), "k", []int{7})
	if err != nil || !slices.Equal(got, []int{7}) {
		t.Fatalf("the next Do: %v, %v", got, err)
	}
}

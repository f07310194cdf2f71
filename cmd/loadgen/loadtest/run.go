// Package loadtest drives counters and instruments with many concurrent
// requests and measures what users care about: throughput, latency
// percentiles, errors, whether the totals are exact, and how long the
// roll-up takes to catch up. cmd/loadgen is its command line.
package loadtest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what one operation reports.
type Outcome struct {
	// Status is the HTTP status, 200 for a raw operation that succeeded,
	// 0 for a transport error.
	Status int
	// OK is true when the operation was acknowledged.
	OK bool
}

// Op performs one operation; worker is the calling goroutine's number.
type Op func(ctx context.Context, worker int) Outcome

// Options shape a run.
type Options struct {
	Concurrency int
	Duration    time.Duration // stop after this long, if Requests is 0
	Requests    int64         // stop after this many operations, if > 0
	Rate        float64       // at most this many operations per second; 0: unlimited
	// Progress receives a live status line every second; nil for none.
	Progress io.Writer
	// Terminal rewrites the progress line in place instead of adding lines.
	Terminal bool
}

// Stats summarise a run.
type Stats struct {
	Requests   int64          `json:"requests"`
	OK         int64          `json:"ok"`
	Seconds    float64        `json:"seconds"`
	Throughput float64        `json:"ok_per_second"`
	P50        float64        `json:"p50_ms"`
	P95        float64        `json:"p95_ms"`
	P99        float64        `json:"p99_ms"`
	Errors     map[string]int `json:"errors_by_status,omitempty"`
	// LastOK is when the last acknowledged operation finished.
	LastOK time.Time `json:"-"`
}

// Run calls op from Concurrency goroutines until the duration or request
// count is reached, pacing them to Rate, and returns the statistics.
func Run(ctx context.Context, o Options, op Op) Stats {
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	// The deadline stops new operations only: cancelling one in flight
	// could leave it applied but unacknowledged, and the totals inexact.
	var deadline time.Time
	if o.Requests == 0 {
		deadline = time.Now().Add(o.Duration)
	}
	over := func() bool { return ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline) }

	var (
		issued, ok atomic.Int64
		lastOK     atomic.Int64
		mu         sync.Mutex
		errors     = map[string]int{}
		latencies  = make([][]time.Duration, o.Concurrency)
		wg         sync.WaitGroup
		start      = time.Now()
	)
	for w := range o.Concurrency {
		wg.Go(func() {
			for {
				n := issued.Add(1)
				if o.Requests > 0 && n > o.Requests {
					return
				}
				if o.Rate > 0 {
					// Operation n starts no earlier than its slot.
					slot := start.Add(time.Duration(float64(n-1) / o.Rate * float64(time.Second)))
					select {
					case <-time.After(time.Until(slot)):
					case <-ctx.Done():
					}
				}
				if over() {
					return
				}
				t0 := time.Now()
				out := op(ctx, w)
				latencies[w] = append(latencies[w], time.Since(t0))
				if out.OK {
					ok.Add(1)
					lastOK.Store(time.Now().UnixNano())
				} else {
					mu.Lock()
					errors[statusName(out.Status)]++
					mu.Unlock()
				}
			}
		})
	}

	done := make(chan struct{})
	if o.Progress != nil {
		go progress(o, start, &ok, func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, c := range errors {
				n += c
			}
			return n
		}, done)
	}
	wg.Wait()
	close(done)

	elapsed := time.Since(start)
	all := slices.Concat(latencies...)
	slices.Sort(all)
	s := Stats{
		Requests:   int64(len(all)),
		OK:         ok.Load(),
		Seconds:    elapsed.Seconds(),
		Throughput: float64(ok.Load()) / elapsed.Seconds(),
		P50:        ms(percentile(all, 50)),
		P95:        ms(percentile(all, 95)),
		P99:        ms(percentile(all, 99)),
	}
	if len(errors) > 0 {
		s.Errors = errors
	}
	if n := lastOK.Load(); n > 0 {
		s.LastOK = time.Unix(0, n)
	}
	return s
}

func progress(o Options, start time.Time, ok *atomic.Int64, errCount func() int, done chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prev, prevAt := int64(0), start
	for {
		select {
		case <-done:
			if o.Terminal {
				fmt.Fprintln(o.Progress)
			}
			return
		case now := <-tick.C:
			n := ok.Load()
			rate := float64(n-prev) / now.Sub(prevAt).Seconds()
			prev, prevAt = n, now
			line := fmt.Sprintf("%6.1fs  ok %8d  %7.0f/s  errors %d", now.Sub(start).Seconds(), n, rate, errCount())
			if o.Terminal {
				fmt.Fprintf(o.Progress, "\r%s   ", line)
			} else {
				fmt.Fprintln(o.Progress, line)
			}
		}
	}
}

func statusName(s int) string {
	if s == 0 {
		return "transport"
	}
	return strconv.Itoa(s)
}

// percentile returns the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package loadtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCountsOutcomes(t *testing.T) {
	var calls atomic.Int64
	s := Run(context.Background(), Options{Concurrency: 8, Requests: 1000}, func(ctx context.Context, worker int) Outcome {
		n := calls.Add(1)
		switch {
		case n%10 == 0:
			return Outcome{Status: 503}
		case n%25 == 0:
			return Outcome{Status: 0}
		}
		return Outcome{Status: 200, OK: true}
	})
	if calls.Load() != 1000 || s.Requests != 1000 {
		t.Fatalf("%d calls, %d requests, want 1000", calls.Load(), s.Requests)
	}
	// 100 multiples of 10, and 20 multiples of 25 that are not multiples of 10 (every other one).
	if s.Errors["503"] != 100 || s.Errors["transport"] != 20 || s.OK != 880 {
		t.Errorf("ok %d, errors %v", s.OK, s.Errors)
	}
	if s.LastOK.IsZero() || s.P50 < 0 || s.P99 < s.P50 {
		t.Errorf("stats %+v", s)
	}
}

func TestRunStopsAtTheDeadlineWithoutCancellingWork(t *testing.T) {
	var started, finished atomic.Int64
	s := Run(context.Background(), Options{Concurrency: 4, Duration: 50 * time.Millisecond}, func(ctx context.Context, worker int) Outcome {
		started.Add(1)
		select {
		case <-time.After(30 * time.Millisecond):
		case <-ctx.Done():
			return Outcome{} // would be a failure the totals cannot account for
		}
		finished.Add(1)
		return Outcome{Status: 200, OK: true}
	})
	if started.Load() != finished.Load() || s.OK != finished.Load() || len(s.Errors) != 0 {
		t.Errorf("started %d, finished %d, ok %d, errors %v", started.Load(), finished.Load(), s.OK, s.Errors)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 1: time.Millisecond} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
}

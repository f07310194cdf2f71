package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Report is the outcome of one scenario run.
type Report struct {
	Scenario    string `json:"scenario"`
	Mode        string `json:"mode"` // "functions" or "raw"
	Concurrency int    `json:"concurrency"`
	Shards      int    `json:"shards,omitempty"`
	Counters    int    `json:"counters,omitempty"`
	Stats
	Check *Check `json:"check,omitempty"`
	// Cost is what the server counted, when it reports it.
	Cost *Cost `json:"cost,omitempty"`
}

// Check is the correctness check after a run of increments.
type Check struct {
	// Acknowledged is the sum of the deltas the system acknowledged, and
	// Strong the sum of the strong reads of the counters afterwards.
	Acknowledged int64 `json:"acknowledged"`
	Strong       int64 `json:"strong"`
	Exact        bool  `json:"exact"`
	// RollupLagMS is the time from the last acknowledged increment until
	// every counter's eventual read equalled its strong read; -1 if it did
	// not within the timeout. Absent for the raw baseline, which has no
	// roll-up of its own.
	RollupLagMS *float64 `json:"rollup_lag_ms,omitempty"`
}

// IncrementSpec describes an increments scenario.
type IncrementSpec struct {
	Name     string // "hot" (one counter) or "spread" (many)
	Counters int
	Shards   int
	// ReadRatio, between 0 and 1, turns that share of operations into
	// eventual reads of a counter ("mixed").
	ReadRatio float64
	// Rollup says whether the system keeps a roll-up whose lag to measure.
	Rollup     bool
	LagTimeout time.Duration
}

// Increments creates the counters, runs increments (and reads) against
// them, then checks that every strong read equals the acknowledged sum and
// measures how long the roll-up takes to catch up.
func Increments(ctx context.Context, c Counters, mode string, o Options, spec IncrementSpec) (Report, error) {
	ids := make([]string, max(spec.Counters, 1))
	prefix := fmt.Sprintf("load-%s-%s-%d", spec.Name, IDSafe(mode), time.Now().UnixNano())
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		if err := c.CreateCounter(ctx, ids[i], spec.Shards); err != nil {
			return Report{}, fmt.Errorf("create counter: %w", err)
		}
	}
	acked := make([]atomic.Int64, len(ids))
	before, counted := Snapshot(ctx, c)
	stats := Run(ctx, o, func(ctx context.Context, worker int) Outcome {
		i := rand.IntN(len(ids))
		if spec.ReadRatio > 0 && rand.Float64() < spec.ReadRatio {
			if _, _, err := c.Eventual(ctx, ids[i]); err != nil {
				return Outcome{Status: statusOf(err)}
			}
			return Outcome{Status: 200, OK: true}
		}
		out := c.Increment(ctx, ids[i])
		if out.OK {
			acked[i].Add(1)
		}
		return out
	})

	r := Report{Scenario: spec.Name, Mode: mode, Concurrency: o.Concurrency, Shards: spec.Shards, Counters: len(ids), Stats: stats}
	check := &Check{Exact: true}
	strong := make([]int64, len(ids))
	for i, id := range ids {
		n, err := c.Strong(ctx, id)
		if err != nil {
			return r, fmt.Errorf("strong read: %w", err)
		}
		strong[i] = n
		check.Acknowledged += acked[i].Load()
		check.Strong += n
		if n != acked[i].Load() {
			check.Exact = false
		}
	}
	if spec.Rollup {
		lag := -1.0
		for deadline := time.Now().Add(spec.LagTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if caughtUp(ctx, c, ids, strong) {
				lag = ms(time.Since(stats.LastOK))
				break
			}
		}
		check.RollupLagMS = &lag
	}
	r.Check = check
	if after, ok := Snapshot(ctx, c); ok && counted {
		r.Cost = CostOf(before, after, check.Acknowledged)
	}
	return r, nil
}

func caughtUp(ctx context.Context, c Counters, ids []string, strong []int64) bool {
	for i, id := range ids {
		n, _, err := c.Eventual(ctx, id)
		if err != nil || n != strong[i] {
			return false
		}
	}
	return true
}

// LagReport is the roll-up's age sampled during a run of increments.
type LagReport struct {
	Report
	TargetRate float64 `json:"target_rate"`
	// Samples of now minus rollup_as_of, read every 100 ms during the run.
	Samples  int     `json:"lag_samples"`
	LagP50MS float64 `json:"lag_p50_ms"`
	LagP99MS float64 `json:"lag_p99_ms"`
	LagMaxMS float64 `json:"lag_max_ms"`
}

// RollupLag runs increments on one counter while sampling how old its
// roll-up is, as a client reading the eventual value sees it.
func RollupLag(ctx context.Context, c Counters, o Options, shards int, lagTimeout time.Duration) (LagReport, error) {
	id := fmt.Sprintf("load-lag-%d", time.Now().UnixNano())
	if err := c.CreateCounter(ctx, id, shards); err != nil {
		return LagReport{}, err
	}
	var acked atomic.Int64
	var samples []time.Duration
	before, counted := Snapshot(ctx, c)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		time.Sleep(2 * time.Second) // the first roll-up waits for a cadence after creation
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, asOf, err := c.Eventual(ctx, id); err == nil {
					samples = append(samples, time.Since(asOf))
				}
			}
		}
	}()
	stats := Run(ctx, o, func(ctx context.Context, worker int) Outcome {
		out := c.Increment(ctx, id)
		if out.OK {
			acked.Add(1)
		}
		return out
	})
	close(stop)
	<-sampled

	r := LagReport{TargetRate: o.Rate, Report: Report{Scenario: "rollup-lag", Mode: "functions", Concurrency: o.Concurrency, Shards: shards, Counters: 1, Stats: stats}}
	strong, err := c.Strong(ctx, id)
	if err != nil {
		return r, err
	}
	lag := -1.0
	for deadline := time.Now().Add(lagTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if caughtUp(ctx, c, []string{id}, []int64{strong}) {
			lag = ms(time.Since(stats.LastOK))
			break
		}
	}
	r.Check = &Check{Acknowledged: acked.Load(), Strong: strong, Exact: strong == acked.Load(), RollupLagMS: &lag}
	if after, ok := Snapshot(ctx, c); ok && counted {
		r.Cost = CostOf(before, after, acked.Load())
	}
	slices.Sort(samples)
	r.Samples = len(samples)
	r.LagP50MS, r.LagP99MS = ms(percentile(samples, 50)), ms(percentile(samples, 99))
	if len(samples) > 0 {
		r.LagMaxMS = ms(samples[len(samples)-1])
	}
	return r, nil
}

// ReadMethod is one way of reading a counter's value.
type ReadMethod struct {
	Name string
	// BilledReads is what Firestore bills per read of a counter with n
	// shards (its pricing: one read per document, an aggregation one per
	// 1,000 index entries).
	BilledReads func(n int) int
	Read        func(ctx context.Context, id string) (int64, error)
}

// ReadLatency is the latency of one read method at one shard count.
type ReadLatency struct {
	Method      string  `json:"method"`
	Shards      int     `json:"shards"`
	Reads       int     `json:"reads"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	BilledReads int     `json:"billed_reads"`
	Value       int64   `json:"value"`
}

// Reads fills a counter's n shards and times each method reps times.
func Reads(ctx context.Context, fill func(ctx context.Context, id string, shards int) error, create func(ctx context.Context, id string, shards int) error,
	n, reps int, methods []ReadMethod) ([]ReadLatency, error) {
	id := fmt.Sprintf("load-reads-%d-%d", n, time.Now().UnixNano())
	if err := create(ctx, id, n); err != nil {
		return nil, err
	}
	if err := fill(ctx, id, n); err != nil {
		return nil, err
	}
	var out []ReadLatency
	for _, m := range methods {
		var lat []time.Duration
		var value int64
		for i := range reps + 2 {
			t0 := time.Now()
			v, err := m.Read(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.Name, err)
			}
			if i >= 2 { // two warm-up reads
				lat = append(lat, time.Since(t0))
			}
			value = v
		}
		slices.Sort(lat)
		out = append(out, ReadLatency{Method: m.Name, Shards: n, Reads: reps,
			P50MS: ms(percentile(lat, 50)), P99MS: ms(percentile(lat, 99)), BilledReads: m.BilledReads(n), Value: value})
	}
	return out, nil
}

// statusOf is the HTTP status of a failed call, 0 for a transport error.
func statusOf(err error) int {
	if e, ok := errors.AsType[*StatusError](err); ok {
		return e.Status
	}
	return 0
}

// IDSafe turns a mode name ("functions, no group commit") into counter id
// characters.
func IDSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

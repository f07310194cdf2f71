package loadtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// MillionReport is the scale benchmark of reconcile's activity index: many
// counters bulk-created, a few of them active, and what a scheduled
// reconcile run, the rankings and the server's memory do then.
type MillionReport struct {
	Counters      int     `json:"counters"`
	CreateSeconds float64 `json:"create_seconds"` // bulk creation, straight into the emulator
	Writers       int     `json:"bulk_writers"`
	Active        int     `json:"active"`
	// Load is the increments on the active counters, through the
	// functions, with the roll-up trigger, at a steady rate (Load.Rate);
	// Lag its staleness samples.
	Load Report    `json:"load"`
	Rate float64   `json:"rate"`
	Lag  Staleness `json:"lag"`
	// Scheduled is the scheduled reconcile ({}) once the load settled,
	// to the end of its pass; Idle the next one, with nothing written.
	Scheduled ReconcileRuns `json:"scheduled"`
	Idle      ReconcileRuns `json:"idle"`
	SettleS   float64       `json:"settle_s"`
	// Rankings and lists over every counter.
	TopAll  ReadLatency `json:"top_all"`
	TopHour ReadLatency `json:"top_hour"`
	List    ReadLatency `json:"list"`
	// Touch reads every counter through one function server (its caches
	// see every id), then increments Incremented distinct ones; RSS is its
	// memory before and after.
	Touched       int     `json:"touched"`
	Incremented   int     `json:"incremented"`
	TouchSeconds  float64 `json:"touch_seconds"`
	RSSBeforeMiB  float64 `json:"rss_before_mib"`
	RSSAfterMiB   float64 `json:"rss_after_mib"`
	TouchFailures int64   `json:"touch_failures"`
	// Error is what stopped the run, if anything did: the report holds
	// what was measured before.
	Error string `json:"error,omitempty"`
}

// Staleness samples how far behind the eventual read is: at a random
// moment, a strong read of a random active counter, then the time until
// its eventual read reaches that value.
type Staleness struct {
	Samples int     `json:"samples"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
}

// ReconcileRuns is the calls of reconcileCounters up to the end of a pass,
// and the Firestore operations the server counted for them.
type ReconcileRuns struct {
	Calls        int     `json:"calls"`
	Seconds      float64 `json:"seconds"`
	Checked      int     `json:"checked"`
	Corrected    int     `json:"corrected"`
	Reads        int64   `json:"reads"`
	Aggregations int64   `json:"aggregations"`
	Commits      int64   `json:"commits"`
}

// MillionSpec sizes the benchmark.
type MillionSpec struct {
	Counters, Active, Incremented int
	Writers                       int           // parallel BulkWriters of the creation
	Settle                        time.Duration // config.ReconcileSettle of the server
}

// Million runs the scale benchmark: f is the function server whose project
// has the roll-up trigger, touch a second server of the same project whose
// memory is measured, raw that project's Firestore client.
func Million(ctx context.Context, f, touch *Functions, raw *Raw, o Options, spec MillionSpec) (MillionReport, error) {
	rep := MillionReport{Counters: spec.Counters, Active: spec.Active, Writers: spec.Writers, SettleS: spec.Settle.Seconds()}
	prefix := fmt.Sprintf("million-%d", time.Now().Unix())
	id := func(i int) string { return fmt.Sprintf("%s-%07d", prefix, i) }

	// Nothing left from before: the measured run starts at an empty index.
	if _, err := reconcileRuns(ctx, f, false); err != nil {
		return rep, err
	}
	t0 := time.Now()
	if err := raw.BulkCounters(ctx, spec.Counters, spec.Writers, id); err != nil {
		return rep, err
	}
	rep.CreateSeconds = time.Since(t0).Seconds()

	acked := make([]atomic.Int64, spec.Active)
	stop := make(chan struct{})
	lag := make(chan []time.Duration)
	go func() { lag <- staleness(ctx, f, spec.Active, id, stop) }()
	rep.Rate = o.Rate
	rep.Load = Report{Scenario: "million", Mode: "functions", Concurrency: o.Concurrency, Shards: 1, Counters: spec.Active,
		Stats: Run(ctx, o, func(ctx context.Context, worker int) Outcome {
			i := rand.IntN(spec.Active)
			out := f.Increment(ctx, id(i))
			if out.OK {
				acked[i].Add(1)
			}
			return out
		})}
	close(stop)
	rep.Lag = staleOf(<-lag)
	check := &Check{Exact: true}
	for i := range spec.Active {
		n, err := f.Strong(ctx, id(i))
		if err != nil {
			return rep, fmt.Errorf("strong read of an active counter: %w", err)
		}
		check.Acknowledged += acked[i].Load()
		check.Strong += n
		check.Exact = check.Exact && n == acked[i].Load()
	}
	rep.Load.Check = check

	// The scheduled run visits a counter once its marker has settled.
	time.Sleep(time.Until(rep.Load.LastOK.Add(spec.Settle + time.Second)))
	var err error
	if rep.Scheduled, err = reconcileRuns(ctx, f, false); err != nil {
		return rep, err
	}
	if rep.Idle, err = reconcileRuns(ctx, f, false); err != nil {
		return rep, err
	}

	for _, q := range []struct {
		out   *ReadLatency
		fn    string
		query string
	}{{&rep.TopAll, "topCounters", "?window=all&limit=10"}, {&rep.TopHour, "topCounters", "?window=hour&limit=10"},
		{&rep.List, "listCounters", "?limit=20"}} {
		l, err := Timed(ctx, 30, func(ctx context.Context) error {
			_, err := f.Do(ctx, "GET", q.fn, q.query, nil, nil)
			return err
		})
		if err != nil {
			return rep, err
		}
		l.Method = q.fn + q.query
		*q.out = l
	}

	before, err := touch.Stats(ctx)
	if err != nil {
		return rep, err
	}
	rep.RSSBeforeMiB = float64(before.RSSBytes) / (1 << 20)
	t0 = time.Now()
	var next atomic.Int64
	var failures atomic.Int64
	touchAll := func(n int, op func(ctx context.Context, i int) error) {
		var wg sync.WaitGroup
		for range o.Concurrency {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
					if op(ctx, i) != nil {
						failures.Add(1)
					}
				}
			})
		}
		wg.Wait()
	}
	touchAll(spec.Counters, func(ctx context.Context, i int) error {
		_, _, err := touch.Eventual(ctx, id(i))
		return err
	})
	// Increments of counters nobody else writes (past the active ones):
	// their trigger events go to f.
	next.Store(int64(spec.Active))
	touchAll(spec.Active+spec.Incremented, func(ctx context.Context, i int) error {
		if out := touch.Increment(ctx, id(i)); !out.OK {
			return fmt.Errorf("increment: %d", out.Status)
		}
		return nil
	})
	rep.TouchSeconds = time.Since(t0).Seconds()
	rep.Touched, rep.Incremented, rep.TouchFailures = spec.Counters, spec.Incremented, failures.Load()
	after, err := touch.Stats(ctx)
	if err != nil {
		return rep, err
	}
	rep.RSSAfterMiB = float64(after.RSSBytes) / (1 << 20)
	return rep, nil
}

// reconcileRuns calls reconcile, the scheduled run or (full) the full
// audit, until it completes a pass, and counts what the pass read.
func reconcileRuns(ctx context.Context, f *Functions, full bool) (ReconcileRuns, error) {
	var r ReconcileRuns
	before, err := f.Stats(ctx)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	for {
		run, err := f.Reconcile(ctx, full)
		if err != nil {
			return r, err
		}
		r.Calls++
		r.Checked += run.Checked
		r.Corrected += run.Corrected
		if run.PassComplete {
			break
		}
	}
	r.Seconds = time.Since(t0).Seconds()
	after, err := f.Stats(ctx)
	if err != nil {
		return r, err
	}
	a, b := after.Firestore["reconcile"], before.Firestore["reconcile"]
	r.Reads, r.Aggregations, r.Commits = a.Reads-b.Reads, a.Aggregations-b.Aggregations, a.Commits-b.Commits
	return r, nil
}

// staleness samples the eventual read's staleness (see Staleness) every
// 100 ms until stop, each sample on its own so a slow one delays none.
func staleness(ctx context.Context, f *Functions, active int, id func(int) string, stop <-chan struct{}) []time.Duration {
	var (
		mu      sync.Mutex
		samples []time.Duration
		wg      sync.WaitGroup
	)
	sample := func() {
		c := id(rand.IntN(active))
		t0 := time.Now()
		strong, err := f.Strong(ctx, c)
		if err != nil {
			return
		}
		for deadline := t0.Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if n, _, err := f.Eventual(ctx, c); err == nil && n >= strong {
				mu.Lock()
				samples = append(samples, time.Since(t0))
				mu.Unlock()
				return
			}
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			wg.Wait()
			return samples
		case <-tick.C:
			wg.Go(sample)
		}
	}
}

func staleOf(samples []time.Duration) Staleness {
	slices.Sort(samples)
	s := Staleness{Samples: len(samples), P50MS: ms(percentile(samples, 50)), P99MS: ms(percentile(samples, 99))}
	if len(samples) > 0 {
		s.MaxMS = ms(samples[len(samples)-1])
	}
	return s
}

// BulkCounters creates n counters of one shard and no shard document (a
// missing shard counts 0, and writes no trigger event), with writers
// BulkWriters at once: the emulator takes about 2,000 writes a second from
// one and several times that from four.
func (r *Raw) BulkCounters(ctx context.Context, n, writers int, id func(int) string) error {
	created := time.Now()
	var g errgroup.Group
	for w := range writers {
		g.Go(func() error {
			return r.bulk(ctx, w*n/writers, (w+1)*n/writers, func(i int) map[string]map[string]any {
				return map[string]map[string]any{"counters/" + id(i): {"num_shards": 1, "count": 0,
					"rollup_as_of": time.Unix(0, 0), "created_at": created, "owner": "", "origin": "admin", "ranked": true}}
			})
		})
	}
	return g.Wait()
}

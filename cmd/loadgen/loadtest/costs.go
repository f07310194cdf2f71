package loadtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shardcount/shardcount/internal/service"
)

// Cost is what the function server itself counted during a run (its
// /debug/shardcount before and after): Firestore operations by purpose,
// and roll-up invocations.
type Cost struct {
	Increments               int64   `json:"increments"`
	Commits                  int64   `json:"commits"` // increment commits
	CommitsPerIncrement      float64 `json:"commits_per_increment"`
	RollupEvents             int64   `json:"rollup_events"`
	RollupEventsPerIncrement float64 `json:"rollup_events_per_increment"`
	// The roll-up's own Firestore operations.
	RollupReads        int64 `json:"rollup_reads"`
	RollupAggregations int64 `json:"rollup_aggregations"`
	RollupCommits      int64 `json:"rollup_commits"`
	RollupWrites       int64 `json:"rollup_writes"`
	// ServerCPUPerIncrement is the function server's CPU time over the
	// run (its strong reads included), per increment, in µs.
	ServerCPUPerIncrement float64 `json:"server_cpu_us_per_increment"`
}

// statser is a target whose server reports what it counts.
type statser interface {
	Stats(ctx context.Context) (service.Stats, error)
}

// CostOf returns the difference of two snapshots, per increment.
func CostOf(before, after service.Stats, increments int64) *Cost {
	inc := func(label string) (int64, int64, int64, int64) {
		a, b := after.Firestore[label], before.Firestore[label]
		return a.Commits - b.Commits, a.Writes - b.Writes, a.Reads - b.Reads, a.Aggregations - b.Aggregations
	}
	c := &Cost{Increments: increments, RollupEvents: after.RollupEvents - before.RollupEvents}
	c.Commits, _, _, _ = inc("increment")
	c.RollupCommits, c.RollupWrites, c.RollupReads, c.RollupAggregations = inc("rollup")
	if increments > 0 {
		c.CommitsPerIncrement = float64(c.Commits) / float64(increments)
		c.RollupEventsPerIncrement = float64(c.RollupEvents) / float64(increments)
		c.ServerCPUPerIncrement = (after.CPUSeconds - before.CPUSeconds) * 1e6 / float64(increments)
	}
	return c
}

// Snapshot reads the server's counts when the target reports them.
func Snapshot(ctx context.Context, c any) (service.Stats, bool) {
	s, ok := c.(statser)
	if !ok {
		return service.Stats{}, false
	}
	st, err := s.Stats(ctx)
	return st, err == nil
}

// SoakReport is a long run at a steady rate on one counter: whether the
// roll-up still catches up at the end, and the server's memory over time.
type SoakReport struct {
	Report
	TargetRate float64   `json:"target_rate"`
	RSSMiB     []float64 `json:"rss_mib"` // sampled every RSSEvery
	RSSEvery   float64   `json:"rss_every_s"`
}

// Soak runs increments on one counter at o.Rate for o.Duration while
// sampling the server's RSS, then measures how long the roll-up takes to
// equal the strong read.
func Soak(ctx context.Context, f *Functions, o Options, shards int, lagTimeout time.Duration) (SoakReport, error) {
	const every = 10 * time.Second
	r := SoakReport{TargetRate: o.Rate, RSSEvery: every.Seconds()}
	sample := func() {
		if st, err := f.Stats(ctx); err == nil {
			r.RSSMiB = append(r.RSSMiB, float64(st.RSSBytes)/(1<<20))
		}
	}
	sample()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	rep, err := Increments(ctx, f, "functions", o, IncrementSpec{Name: "soak", Counters: 1, Shards: shards, Rollup: true, LagTimeout: lagTimeout})
	close(stop)
	<-sampled
	sample()
	r.Report = rep
	return r, err
}

// ReshardReport measures a shrink and a growth of live counters.
type ReshardReport struct {
	// Shrink: strong reads of a counter whose 1,000 shards hold 1 each,
	// before and after shrinking it to 10.
	ShrinkFrom      int         `json:"shrink_from"`
	ShrinkTo        int         `json:"shrink_to"`
	StrongBefore    ReadLatency `json:"strong_before"`
	StrongAfter     ReadLatency `json:"strong_after"`
	ShardDocsBefore int         `json:"shard_docs_before"`
	ShardDocsAfter  int         `json:"shard_docs_after"`
	ShrinkMS        float64     `json:"shrink_ms"` // the reshard request, its first merge included
	// Grow: the same load on a counter before and after growing it.
	GrowFrom  int    `json:"grow_from"`
	GrowTo    int    `json:"grow_to"`
	Before    Report `json:"grow_before"`
	AfterGrow Report `json:"grow_after"`
}

// Reshard runs the resharding benchmark: fill and shrink a counter, then
// load one before and after growing it (cacheWait: SHARD_COUNT_CACHE of the
// server, so instances see the new count).
func Reshard(ctx context.Context, f *Functions, raw *Raw, o Options, cacheWait time.Duration) (ReshardReport, error) {
	rep := ReshardReport{ShrinkFrom: 1000, ShrinkTo: 10, GrowFrom: 1, GrowTo: 100}
	id := fmt.Sprintf("load-shrink-%d", time.Now().UnixNano())
	if err := f.CreateCounter(ctx, id, rep.ShrinkFrom); err != nil {
		return rep, err
	}
	if err := raw.Fill(ctx, id, rep.ShrinkFrom); err != nil {
		return rep, err
	}
	strong := func() (ReadLatency, error) {
		return readLatency(ctx, "getCounter strong", rep.ShrinkFrom, 30, func(ctx context.Context) (int64, error) { return f.Strong(ctx, id) })
	}
	var err error
	if rep.StrongBefore, err = strong(); err != nil {
		return rep, err
	}
	rep.ShardDocsBefore, _ = raw.ShardDocs(ctx, id)
	t0 := time.Now()
	if err := f.Reshard(ctx, id, rep.ShrinkTo); err != nil {
		return rep, err
	}
	rep.ShrinkMS = ms(time.Since(t0))
	if rep.StrongAfter, err = strong(); err != nil {
		return rep, err
	}
	rep.StrongAfter.Shards = rep.ShrinkTo
	rep.ShardDocsAfter, _ = raw.ShardDocs(ctx, id)
	if rep.StrongBefore.Value != int64(rep.ShrinkFrom) || rep.StrongAfter.Value != int64(rep.ShrinkFrom) {
		return rep, fmt.Errorf("strong reads %d before and %d after the shrink, want %d", rep.StrongBefore.Value, rep.StrongAfter.Value, rep.ShrinkFrom)
	}

	gid := fmt.Sprintf("load-grow-%d", time.Now().UnixNano())
	if err := f.CreateCounter(ctx, gid, rep.GrowFrom); err != nil {
		return rep, err
	}
	run := func() (Report, error) {
		var acked atomic.Int64
		stats := Run(ctx, o, func(ctx context.Context, _ int) Outcome {
			out := f.Increment(ctx, gid)
			if out.OK {
				acked.Add(1)
			}
			return out
		})
		return Report{Scenario: "grow", Mode: "functions", Concurrency: o.Concurrency, Counters: 1, Stats: stats}, nil
	}
	if rep.Before, err = run(); err != nil {
		return rep, err
	}
	rep.Before.Shards = rep.GrowFrom
	if err := f.Reshard(ctx, gid, rep.GrowTo); err != nil {
		return rep, err
	}
	time.Sleep(cacheWait)
	if rep.AfterGrow, err = run(); err != nil {
		return rep, err
	}
	rep.AfterGrow.Shards = rep.GrowTo
	return rep, nil
}

func readLatency(ctx context.Context, method string, shards, reps int, read func(context.Context) (int64, error)) (ReadLatency, error) {
	var value int64
	l, err := Timed(ctx, reps, func(ctx context.Context) (err error) {
		value, err = read(ctx)
		return err
	})
	if err != nil {
		return ReadLatency{}, err
	}
	l.Method, l.Shards, l.BilledReads, l.Value = method, shards, (shards+999)/1000, value
	return l, nil
}

// SweepReport is one pass of the full audit ({"full": true}) over many
// counters.
type SweepReport struct {
	Counters  int     `json:"counters"` // in the project
	Checked   int     `json:"checked"`
	Corrected int     `json:"corrected"`
	Runs      int     `json:"runs"`
	Seconds   float64 `json:"seconds"`
	// Firestore operations of the pass, measured by the server.
	Reads        int64 `json:"reads"`
	Aggregations int64 `json:"aggregations"`
	Commits      int64 `json:"commits"`
}

// Sweep creates n counters straight in Firestore (every tenth with a stale
// roll-up) and runs the full audit until a pass completes.
func Sweep(ctx context.Context, f *Functions, raw *Raw, n int) (SweepReport, error) {
	rep := SweepReport{Counters: n}
	// Finish any pass under way, so the measured one starts at the beginning.
	for {
		r, err := f.Reconcile(ctx, true)
		if err != nil {
			return rep, err
		}
		if r.PassComplete {
			break
		}
	}
	if err := raw.Counters(ctx, fmt.Sprintf("load-sweep-%d", time.Now().UnixNano()), n); err != nil {
		return rep, err
	}
	runs, err := reconcileRuns(ctx, f, true)
	rep.Runs, rep.Checked, rep.Corrected, rep.Seconds = runs.Calls, runs.Checked, runs.Corrected, runs.Seconds
	rep.Reads, rep.Aggregations, rep.Commits = runs.Reads, runs.Aggregations, runs.Commits
	return rep, err
}

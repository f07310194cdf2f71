package loadtest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// OverheadReport is increments per second on a hot counter through a
// server with telemetry off and one with it on (exporting to a local
// receiver), in alternating rounds of the same run.
type OverheadReport struct {
	Off, On []Report
}

// Overhead runs the hot-counter scenario on off and on: a round each to
// warm up (twice as long, not kept: the emulator's JVM speeds up for a
// while), then rounds pairs, in the order off-on, on-off, … so that a
// drift of the machine weighs on both sides alike.
func Overhead(ctx context.Context, off, on *Functions, o Options, shards, rounds int) (OverheadReport, error) {
	var rep OverheadReport
	run := func(f *Functions, out *[]Report) error {
		o := o
		if out == nil {
			o.Duration *= 2
		}
		r, err := Increments(ctx, f, "functions", o, IncrementSpec{Name: "hot", Counters: 1, Shards: shards})
		if err == nil && out != nil {
			*out = append(*out, r)
		}
		return err
	}
	for _, f := range []*Functions{off, on} {
		if err := run(f, nil); err != nil {
			return rep, err
		}
	}
	for i := range rounds {
		first, second := func() error { return run(off, &rep.Off) }, func() error { return run(on, &rep.On) }
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return rep, err
		}
		if err := second(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// medianCPU is the median server CPU per increment of runs, in µs.
func medianCPU(runs []Report) float64 {
	return median(runs, func(r Report) float64 {
		if r.Cost == nil {
			return 0
		}
		return r.Cost.ServerCPUPerIncrement
	})
}

// medianRate is the median throughput of runs.
func medianRate(runs []Report) float64 {
	return median(runs, func(r Report) float64 { return r.Throughput })
}

func median(runs []Report, of func(Report) float64) float64 {
	values := make([]float64, len(runs))
	for i, r := range runs {
		values[i] = of(r)
	}
	return middle(values)
}

// middle is the median of values (sorted in place): the mean of the two
// middle ones when their number is even.
func middle(values []float64) float64 {
	slices.Sort(values)
	n := len(values)
	switch {
	case n == 0:
		return 0
	case n%2 == 0:
		return (values[n/2-1] + values[n/2]) / 2
	}
	return values[n/2]
}

// Markdown writes the report's table and verdict.
func (r OverheadReport) Markdown(w io.Writer, command string) {
	off, on := medianRate(r.Off), medianRate(r.On)
	fmt.Fprintf(w, "**Telemetry's cost** (`%s`: a hot counter, 1 shard, c=64, through a function server with telemetry off and one exporting traces and metrics to an OTLP receiver in a third process; a warm-up round each, then %d rounds each, in pairs alternating off-on, on-off; the medians):\n\n", command, len(r.Off))
	fmt.Fprintln(w, "| telemetry | inc/s (median) | rounds | server CPU per increment (median) | exact |")
	fmt.Fprintln(w, "|---|---:|---|---:|---|")
	for _, side := range []struct {
		name string
		runs []Report
		rate float64
	}{{"off", r.Off, off}, {"on", r.On, on}} {
		var rounds []string
		exact := true
		for _, run := range side.runs {
			rounds = append(rounds, fmt.Sprintf("%.0f", run.Throughput))
			exact = exact && run.Check != nil && run.Check.Exact
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %.1f µs | %v |\n", side.name, side.rate, joinComma(rounds), medianCPU(side.runs), exact)
	}
	// Each pair ran back to back: the median of their ratios is the cost,
	// less swayed by the machine's drift than the ratio of the medians.
	ratios := make([]float64, min(len(r.On), len(r.Off)))
	for i := range ratios {
		ratios[i] = r.On[i].Throughput / max(r.Off[i].Throughput, 1)
	}
	lower := 100 * (1 - middle(ratios))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| at most 5%% fewer increments/s with telemetry on | %.1f%% fewer (the median of the pairs' ratios); server CPU per increment %+.1f%% | %s |\n",
		lower, 100*(medianCPU(r.On)/max(medianCPU(r.Off), 1e-9)-1), verdict(lower <= 5))
}

func joinComma(s []string) string { return strings.Join(s, ", ") }

package loadtest

import (
	"context"
	"slices"
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

// MedianCPU is the median server CPU per increment of runs, in µs.
func MedianCPU(runs []Report) float64 {
	return median(runs, func(r Report) float64 {
		if r.Cost == nil {
			return 0
		}
		return r.Cost.ServerCPUPerIncrement
	})
}

// MedianRate is the median throughput of runs.
func MedianRate(runs []Report) float64 {
	return median(runs, func(r Report) float64 { return r.Throughput })
}

func median(runs []Report, of func(Report) float64) float64 {
	values := make([]float64, len(runs))
	for i, r := range runs {
		values[i] = of(r)
	}
	return Middle(values)
}

// Middle is the median of values (sorted in place): the mean of the two
// middle ones when their number is even.
func Middle(values []float64) float64 {
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

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

// Overhead alternates rounds of the hot-counter scenario on off and on.
func Overhead(ctx context.Context, off, on *Functions, o Options, shards, rounds int) (OverheadReport, error) {
	var rep OverheadReport
	for range rounds {
		for _, side := range []struct {
			f   *Functions
			out *[]Report
		}{{off, &rep.Off}, {on, &rep.On}} {
			r, err := Increments(ctx, side.f, "functions", o, IncrementSpec{Name: "hot", Counters: 1, Shards: shards})
			if err != nil {
				return rep, err
			}
			*side.out = append(*side.out, r)
		}
	}
	return rep, nil
}

// medianRate is the median throughput of runs.
func medianRate(runs []Report) float64 {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.Throughput
	}
	slices.Sort(rates)
	if len(rates) == 0 {
		return 0
	}
	return rates[len(rates)/2]
}

// Markdown writes the report's table and verdict.
func (r OverheadReport) Markdown(w io.Writer, command string) {
	off, on := medianRate(r.Off), medianRate(r.On)
	fmt.Fprintf(w, "**Telemetry's cost** (`%s`: a hot counter, 1 shard, c=64, %d alternating rounds each through a function server with telemetry off and one exporting traces and metrics to an OTLP receiver in another process; the median):\n\n", command, len(r.Off))
	fmt.Fprintln(w, "| telemetry | inc/s (median) | rounds | exact |")
	fmt.Fprintln(w, "|---|---:|---|---|")
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
		fmt.Fprintf(w, "| %s | %.0f | %s | %v |\n", side.name, side.rate, joinComma(rounds), exact)
	}
	lower := 100 * (1 - on/max(off, 1))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| at most 5%% fewer increments/s with telemetry on | %.1f%% fewer | %s |\n", lower, verdict(lower <= 5))
}

func joinComma(s []string) string { return strings.Join(s, ", ") }

package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// Overhead writes the table of telemetry's cost, and its verdict.
func Overhead(w io.Writer, r loadtest.OverheadReport, command string) {
	off, on := loadtest.MedianRate(r.Off), loadtest.MedianRate(r.On)
	fmt.Fprintf(w, "**Telemetry's cost** (`%s`: a hot counter, 1 shard, c=64, through a function server with telemetry off and one exporting traces and metrics to an OTLP receiver in a third process; a warm-up round each, then %d rounds each, in pairs alternating off-on, on-off; the medians):\n\n", command, len(r.Off))
	fmt.Fprintln(w, "| telemetry | inc/s (median) | rounds | server CPU per increment (median) | exact |")
	fmt.Fprintln(w, "|---|---:|---|---:|---|")
	for _, side := range []struct {
		name string
		runs []loadtest.Report
		rate float64
	}{{"off", r.Off, off}, {"on", r.On, on}} {
		var rounds []string
		exact := true
		for _, run := range side.runs {
			rounds = append(rounds, fmt.Sprintf("%.0f", run.Throughput))
			exact = exact && run.Check != nil && run.Check.Exact
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %.1f µs | %v |\n", side.name, side.rate, strings.Join(rounds, ", "), loadtest.MedianCPU(side.runs), exact)
	}
	// Each pair ran back to back: the median of their ratios is the cost,
	// less swayed by the machine's drift than the ratio of the medians.
	ratios := make([]float64, min(len(r.On), len(r.Off)))
	for i := range ratios {
		ratios[i] = r.On[i].Throughput / max(r.Off[i].Throughput, 1)
	}
	lower := 100 * (1 - loadtest.Middle(ratios))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| at most 5%% fewer increments/s with telemetry on | %.1f%% fewer (the median of the pairs' ratios); server CPU per increment %+.1f%% | %s |\n",
		lower, 100*(loadtest.MedianCPU(r.On)/max(loadtest.MedianCPU(r.Off), 1e-9)-1), verdict(lower <= 5))
}

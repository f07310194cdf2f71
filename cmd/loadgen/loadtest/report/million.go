package report

import (
	"fmt"
	"io"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// Markdown writes the scale benchmark's section of bench/README.md.

func Million(w io.Writer, m *loadtest.MillionReport) {
	if m == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "**Many counters** (%d counters bulk-created straight into the emulator, %d BulkWriters at once, in %.0f s; %d of them (0.1%%) incremented through the functions with the roll-up trigger for %.0f s at %.0f/s; then the scheduled reconcile, once their markers settled (%.0f s), and once more with nothing written; rankings and lists over all of them; then one function server reads every counter and increments %d more):\n\n",
		m.Counters, m.Writers, m.CreateSeconds, m.Active, m.Load.Seconds, m.Rate, m.SettleS, m.Incremented)
	if m.Error != "" {
		fmt.Fprintf(w, "**The run stopped**: %s. What follows was measured before.\n\n", m.Error)
	}
	fmt.Fprintln(w, "| reconcile `{}` | calls | time | counters checked | corrected | document reads | aggregations | commits | reads per active counter |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range []struct {
		name string
		r    loadtest.ReconcileRuns
	}{{fmt.Sprintf("after %d counters were active", m.Active), m.Scheduled}, {"the next run, nothing written", m.Idle}} {
		fmt.Fprintf(w, "| %s | %d | %.1f s | %d | %d | %d | %d | %d | %.2f |\n", r.name, r.r.Calls, r.r.Seconds, r.r.Checked, r.r.Corrected,
			r.r.Reads, r.r.Aggregations, r.r.Commits, float64(r.r.Reads+r.r.Aggregations)/float64(max(1, m.Active)))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| read over every counter | p50 | p99 |")
	fmt.Fprintln(w, "|---|---:|---:|")
	for _, l := range []loadtest.ReadLatency{m.TopAll, m.TopHour, m.List} {
		fmt.Fprintf(w, "| `%s` | %.1f ms | %.1f ms |\n", l.Method, l.P50MS, l.P99MS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Increments on the active counters: %.0f/s, p99 %.1f ms, %s. The eventual read's staleness while they ran (a strong read of a random active counter every 100 ms, then the time until its eventual read reached it; %d samples): p50 %.0f ms, p99 %.0f ms, max %.0f ms. Touching %d counters (reads) and %d increments of distinct ones took %.0f s (%d failures); the server's RSS went from %.0f MiB to %.0f MiB.\n",
		m.Load.Throughput, m.Load.P99, exact(&m.Load), m.Lag.Samples, m.Lag.P50MS, m.Lag.P99MS, m.Lag.MaxMS,
		m.Touched, m.Incremented, m.TouchSeconds, m.TouchFailures, m.RSSBeforeMiB, m.RSSAfterMiB)
	fmt.Fprintln(w)
	perActive := float64(m.Scheduled.Reads+m.Scheduled.Aggregations) / float64(max(1, m.Active))
	idle := m.Idle.Reads + m.Idle.Aggregations
	cadenceMS := 1000.0 // ROLLUP_CADENCE of the servers (the default)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| a scheduled run reads at most 3 documents per active counter plus a constant | %.2f per active counter (unique counters add a `COUNT`: 4) | %s |\n", perActive, verdict(perActive <= 3.1))
	fmt.Fprintf(w, "| idle counters cost 0 | %d reads for %d idle counters (the cursor and one empty query) | %s |\n", idle, m.Counters, verdict(idle <= 5))
	fmt.Fprintf(w, "| RSS under 256 MiB after touching every counter | %.0f MiB | %s |\n", m.RSSAfterMiB, verdict(m.RSSAfterMiB > 0 && m.RSSAfterMiB < 256))
	fmt.Fprintf(w, "| roll-up lag p99 within 2 cadences | %.0f ms | %s |\n", m.Lag.P99MS, verdict(m.Lag.Samples > 0 && m.Lag.P99MS <= 2*cadenceMS))
}

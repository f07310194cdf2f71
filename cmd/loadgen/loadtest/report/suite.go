package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/feed"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/reactions"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/views"
)

// Suite is everything the benchmark suite measured in one run.
type Suite struct {
	Command    string                  `json:"command"`
	Machine    string                  `json:"machine"`
	RunSeconds float64                 `json:"run_seconds"`
	Rounds     int                     `json:"rounds"`
	CadenceS   float64                 `json:"cadence_s"` // ROLLUP_CADENCE of the servers
	Increments []loadtest.Report       `json:"increments"`
	Reads      []loadtest.ReadLatency  `json:"reads"`
	Lag        *loadtest.LagReport     `json:"rollup_lag,omitempty"`
	Soak       *loadtest.SoakReport    `json:"soak,omitempty"`
	Reshard    *loadtest.ReshardReport `json:"reshard,omitempty"`
	Sweep      *loadtest.SweepReport   `json:"sweep,omitempty"`
	Queries    []loadtest.ReadLatency  `json:"instrument_queries"`
	// What apps count with: likes, reactions, views, several instances,
	// time windows.
	Likes     []loadtest.LikesReport      `json:"likes,omitempty"`
	Reactions []reactions.ReactionsReport `json:"reactions,omitempty"`
	Views     []views.Report              `json:"views,omitempty"`
	Feed      *feed.Report                `json:"feed,omitempty"`
	FirstLike *loadtest.FirstLikesReport  `json:"first_likes,omitempty"`
	Instances *loadtest.InstancesReport   `json:"instances,omitempty"`
	Windows   *loadtest.WindowsReport     `json:"windows,omitempty"`
	Million   *loadtest.MillionReport     `json:"million,omitempty"`
}

// Modes the increments benchmark runs, in the tables' order.
var suiteModes = []string{"functions", "functions, no group commit", "raw"}

// find returns the increments report of a mode, shard count and concurrency.
func find(s *Suite, mode string, shards, c int) *loadtest.Report {
	for i, r := range s.Increments {
		if r.Mode == mode && r.Shards == shards && r.Concurrency == c {
			return &s.Increments[i]
		}
	}
	return nil
}

func axes(s *Suite) (shards, conc []int) {
	for _, r := range s.Increments {
		if !slices.Contains(shards, r.Shards) {
			shards = append(shards, r.Shards)
		}
		if !slices.Contains(conc, r.Concurrency) {
			conc = append(conc, r.Concurrency)
		}
	}
	slices.Sort(shards)
	slices.Sort(conc)
	return shards, conc
}

// Markdown writes the tables of bench/README.md.
func Markdown(w io.Writer, s *Suite) {
	fmt.Fprintf(w, "Produced by `%s` on %s.\n\n", s.Command, s.Machine)

	fmt.Fprintf(w, "**Increments** (one hot counter, +1 each; the modes alternate, %d runs of %.0f s each, the median kept; "+
		"commits per increment as the function server counted them; exact = every run's strong read equalled the acknowledged increments):\n", s.Rounds, s.RunSeconds)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shards | concurrency | group commit inc/s | p99 | commits/inc | no group commit inc/s | p99 | commits/inc | raw inc/s | raw p99 | group commit / raw | exact |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	shards, conc := axes(s)
	for _, n := range shards {
		for _, c := range conc {
			g, o, r := find(s, suiteModes[0], n, c), find(s, suiteModes[1], n, c), find(s, suiteModes[2], n, c)
			if g == nil || r == nil {
				continue
			}
			fmt.Fprintf(w, "| %d | %d | %.0f | %.1f ms | %s | %s | %s | %s | %.0f | %.1f ms | %.2f× | %s |\n",
				n, c, g.Throughput, g.P99, perInc(g), rate(o), p99(o), perInc(o), r.Throughput, r.P99, g.Throughput/r.Throughput, exact(g, o, r))
		}
	}
	targets(w, s)

	fmt.Fprintln(w)
	fmt.Fprintln(w, "**Strong reads** (every shard holds a value; billed reads per Firestore pricing):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shards | method | p50 | p99 | billed reads | speed-up vs stream |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|")
	for _, rl := range s.Reads {
		stream := 0.0
		for _, o := range s.Reads {
			if o.Shards == rl.Shards && strings.HasPrefix(o.Method, "stream") {
				stream = o.P50MS
			}
		}
		speed := "–"
		if stream > 0 && rl.P50MS > 0 && !strings.HasPrefix(rl.Method, "stream") {
			speed = fmt.Sprintf("%.1f×", stream/rl.P50MS)
		}
		fmt.Fprintf(w, "| %d | %s | %.1f ms | %.1f ms | %d | %s |\n", rl.Shards, rl.Method, rl.P50MS, rl.P99MS, rl.BilledReads, speed)
	}

	if l := s.Lag; l != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "**Roll-up lag under load** (%d shards, concurrency %d, target %s): %.0f increments/s for %.0f s; "+
			"age of the roll-up a reader sees, sampled every 100 ms: p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d samples); "+
			"caught up %s after the last increment; exact: %v.\n",
			l.Shards, l.Concurrency, rateText(l), l.Throughput, l.Seconds, l.LagP50MS, l.LagP99MS, l.LagMaxMS, l.Samples,
			lagText(l.Check), l.Check != nil && l.Check.Exact)
		if c := l.Cost; c != nil && c.RollupEvents > 0 {
			cadences := l.Seconds / s.CadenceS
			fmt.Fprintln(w)
			fmt.Fprintf(w, "**Roll-up cost, measured** (same run, the server's own count of the roll-up's Firestore operations; "+
				"%d increments in %d commits, %d events, %.0f cadences):\n\n", c.Increments, c.Commits, c.RollupEvents, cadences)
			fmt.Fprintln(w, "| | document reads | aggregations | commits | writes |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
			per := func(name string, d float64) {
				fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.3f |\n", name, float64(c.RollupReads)/d, float64(c.RollupAggregations)/d,
					float64(c.RollupCommits)/d, float64(c.RollupWrites)/d)
			}
			per("per event", float64(c.RollupEvents))
			per("per cadence", cadences)
			per("per increment", float64(c.Increments))
		}
	}

	if k := s.Soak; k != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "**Soak** (one counter, 10 shards, target %.0f/s for %.0f s, concurrency %d): %.0f increments/s, p99 %.1f ms, "+
			"%s commits and %s roll-up events per increment; the eventual read equalled the strong read %s after the last increment; "+
			"exact: %v; function server RSS (MiB, every %.0f s): %s.\n",
			k.TargetRate, k.Seconds, k.Concurrency, k.Throughput, k.P99, costField(k.Cost, true), costField(k.Cost, false),
			lagText(k.Check), k.Check != nil && k.Check.Exact, k.RSSEvery, mibs(k.RSSMiB))
	}

	if r := s.Reshard; r != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "**Resharding** (strong reads of a counter whose shards hold 1 each, before and after shrinking it; the same load on a counter before and after growing it):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| | shards | shard documents | strong read p50 | p99 | billed reads (SUM) | billed reads if streamed |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
		fmt.Fprintf(w, "| before the shrink | %d | %d | %.1f ms | %.1f ms | %d | %d |\n", r.ShrinkFrom, r.ShardDocsBefore, r.StrongBefore.P50MS, r.StrongBefore.P99MS, r.StrongBefore.BilledReads, r.ShardDocsBefore)
		fmt.Fprintf(w, "| after the shrink | %d | %d | %.1f ms | %.1f ms | %d | %d |\n", r.ShrinkTo, r.ShardDocsAfter, r.StrongAfter.P50MS, r.StrongAfter.P99MS, r.StrongAfter.BilledReads, r.ShardDocsAfter)
		fmt.Fprintf(w, "\nThe shrink request took %.0f ms, its first merge of %d shards included.\n\n", r.ShrinkMS, r.ShardDocsBefore-r.ShardDocsAfter)
		fmt.Fprintln(w, "| | shards | inc/s | p50 | p99 |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
		fmt.Fprintf(w, "| before growing | %d | %.0f | %.1f ms | %.1f ms |\n", r.GrowFrom, r.Before.Throughput, r.Before.P50, r.Before.P99)
		fmt.Fprintf(w, "| after growing | %d | %.0f | %.1f ms | %.1f ms |\n", r.GrowTo, r.AfterGrow.Throughput, r.AfterGrow.P50, r.AfterGrow.P99)
	}

	if sw := s.Sweep; sw != nil && sw.Checked > 0 {
		perSec := float64(sw.Checked) / sw.Seconds
		fmt.Fprintln(w)
		fmt.Fprintf(w, "**Reconcile sweep** (one full pass, %d runs of reconcileCounters): %d counters checked in %.1f s (%.0f counters/s), "+
			"%d corrected; per counter %.2f document reads, %.2f aggregations, %.3f commits (measured). "+
			"At that rate a million counters take %.0f min of sweeping: with RECONCILE_BUDGET=4m and a run every 15 min, a full pass every %.1f h; "+
			"it costs about %.1f million document reads and %.1f million aggregations (each billed as one read per 1,000 shards) per pass.\n",
			sw.Runs, sw.Checked, sw.Seconds, perSec, sw.Corrected,
			float64(sw.Reads)/float64(sw.Checked), float64(sw.Aggregations)/float64(sw.Checked), float64(sw.Commits)/float64(sw.Checked),
			1e6/perSec/60, 1e6/perSec/240*0.25, float64(sw.Reads)/float64(sw.Checked), float64(sw.Aggregations)/float64(sw.Checked))
	}

	appsMarkdown(w, s)
	Million(w, s.Million)

	if len(s.Queries) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "**Instruments queries** (first page of 20 by exchange, 2,000 documents):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| shard values | queries per page | p50 | p99 |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|")
		for _, q := range s.Queries {
			fmt.Fprintf(w, "| %d | %d | %.1f ms | %.1f ms |\n", q.Shards, (q.Shards+29)/30, q.P50MS, q.P99MS)
		}
	}
}

// targets judges the group-commit targets of issue 12 on this run.
func targets(w io.Writer, s *Suite) {
	ratio := func(n, c int) (float64, bool) {
		g, r := find(s, suiteModes[0], n, c), find(s, suiteModes[2], n, c)
		if g == nil || r == nil || r.Throughput == 0 {
			return 0, false
		}
		return g.Throughput / r.Throughput, true
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	if v, ok := ratio(1, 64); ok {
		fmt.Fprintf(w, "| 1 shard, c=64: group commit ≥ 3× raw | %.2f× | %s |\n", v, verdict(v >= 3))
	}
	if v, ok := ratio(10, 64); ok {
		fmt.Fprintf(w, "| 10 shards, c=64: group commit ≥ 1.2× raw | %.2f× | %s |\n", v, verdict(v >= 1.2))
	}
	worst, p99ok, p99s := 0.0, true, []string{}
	shards, conc := axes(s)
	for _, n := range shards {
		for _, c := range conc {
			g, r := find(s, suiteModes[0], n, c), find(s, suiteModes[2], n, c)
			if g == nil || r == nil {
				continue
			}
			if c == 64 && g.Cost != nil {
				worst = max(worst, g.Cost.CommitsPerIncrement)
			}
			if g.P99 > r.P99 {
				p99ok = false
				p99s = append(p99s, fmt.Sprintf("%d shards c=%d: %.1f vs %.1f ms", n, c, g.P99, r.P99))
			}
		}
	}
	fmt.Fprintf(w, "| commits per increment ≤ 0.25 at c=64 | at most %.3f | %s |\n", worst, verdict(worst <= 0.25))
	detail := "in every configuration"
	if !p99ok {
		detail = "worse in " + strings.Join(p99s, "; ")
	}
	fmt.Fprintf(w, "| p99 no worse than raw's | %s | %s |\n", detail, verdict(p99ok))
	allExact := true
	for i := range s.Increments {
		if c := s.Increments[i].Check; c == nil || !c.Exact {
			allExact = false
		}
	}
	fmt.Fprintf(w, "| every run exact | %v | %s |\n", allExact, verdict(allExact))
}

func rate(r *loadtest.Report) string {
	if r == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f", r.Throughput)
}

func p99(r *loadtest.Report) string {
	if r == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", r.P99)
}

func perInc(r *loadtest.Report) string {
	if r == nil || r.Cost == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f", r.Cost.CommitsPerIncrement)
}

func costField(c *loadtest.Cost, commits bool) string {
	switch {
	case c == nil:
		return "–"
	case commits:
		return fmt.Sprintf("%.3f", c.CommitsPerIncrement)
	}
	return fmt.Sprintf("%.3f", c.RollupEventsPerIncrement)
}

func mibs(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, ", ")
}

func exact(rs ...*loadtest.Report) string {
	for _, r := range rs {
		if r.Check == nil || !r.Check.Exact {
			return "**no**"
		}
	}
	return "yes"
}

func lagText(c *loadtest.Check) string {
	if c == nil || c.RollupLagMS == nil {
		return "n/a"
	}
	if *c.RollupLagMS < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", *c.RollupLagMS)
}

func rateText(l *loadtest.LagReport) string {
	if l.TargetRate == 0 {
		return "as fast as possible"
	}
	return fmt.Sprintf("%.0f/s", l.TargetRate)
}

// verdict says whether a target is met, in bold.
func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

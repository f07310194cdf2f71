package report

import (
	"fmt"
	"io"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// appsMarkdown writes the sections about what apps count with: likes,
// reactions, views, several instances, and time windows.
func appsMarkdown(w io.Writer, s *Suite) {
	likesMarkdown(w, s)
	Reactions(w, s.Reactions)
	Views(w, s.Views)
	Feed(w, s.Feed)
	if fl := s.FirstLike; fl != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "**A post's first like** (%d posts whose likes counter, of the kind `likes`, nobody created: each one's first like creates it in the commit that counts it; then a second user's like of each; the function server's own counts, per like):\n\n", fl.Posts)
		fmt.Fprintln(w, "| like | commits | writes | document reads | p50 | p99 |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, r := range []struct {
			name string
			p    loadtest.PerLike
		}{{"the first (creates the counter)", fl.First}, {"a later one", fl.Later}} {
			fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.1f ms | %.1f ms |\n", r.name, r.p.Commits, r.p.Writes, r.p.Reads, r.p.P50MS, r.p.P99MS)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| target | this run | |")
		fmt.Fprintln(w, "|---|---|---|")
		extra := fl.First.Commits - fl.Later.Commits
		fmt.Fprintf(w, "| a first like costs at most one commit more than a like | %+.2f commits | %s |\n", extra, verdict(extra <= 1))
		fmt.Fprintf(w, "| every like counted | %v | %s |\n", fl.Exact, verdict(fl.Exact))
	}
	if in := s.Instances; in != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "**One instance or two** (group commit, roll-up slots and budgets are per instance; the same load through one function server, then spread over two):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| | instances | inc/s | p99 | commits/inc | exact |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
		for _, r := range []struct {
			n int
			r loadtest.Report
		}{{1, in.HotOne}, {2, in.HotTwo}} {
			fmt.Fprintf(w, "| hot counter, 10 shards, c=%d | %d | %.0f | %.1f ms | %s | %s |\n", r.r.Concurrency, r.n, r.r.Throughput, r.r.P99, perInc(&r.r), exact(&r.r))
		}
		if in.RollupOne != nil && in.RollupTwo != nil {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| roll-up at 1,000 increments/s | instances | document reads / cadence | aggregations / cadence | commits / cadence | lag p99 | exact |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|")
			for _, r := range []struct {
				n int
				l *loadtest.LagReport
			}{{1, in.RollupOne}, {2, in.RollupTwo}} {
				reads, aggs, commits, _ := perCadence(r.l, s.CadenceS)
				fmt.Fprintf(w, "| events to %d instance(s) | %d | %.2f | %.2f | %.2f | %.0f ms | %v |\n", r.n, r.n, reads, aggs, commits, r.l.LagP99MS, r.l.Check != nil && r.l.Check.Exact)
			}
		}
	}
	if win := s.Windows; win != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "**Time windows, what they cost** (the roll-up adds each change to a minute, an hour and a day bucket in the commit that writes the total):")
		fmt.Fprintln(w)
		if win.On != nil && win.Off != nil {
			fmt.Fprintln(w, "| roll-up at 1,000 increments/s | commits / cadence | writes / cadence | writes / increment |")
			fmt.Fprintln(w, "|---|---:|---:|---:|")
			for _, r := range []struct {
				name string
				l    *loadtest.LagReport
			}{{"WINDOWS=on", win.On}, {"WINDOWS=off", win.Off}} {
				_, _, commits, writes := perCadence(r.l, s.CadenceS)
				perInc := 0.0
				if c := r.l.Cost; c != nil && c.Increments > 0 {
					perInc = float64(c.RollupWrites) / float64(c.Increments)
				}
				fmt.Fprintf(w, "| %s | %.2f | %.2f | %.4f |\n", r.name, commits, writes, perInc)
			}
			fmt.Fprintln(w)
		}
		if len(win.Top) > 0 || len(win.History) > 0 {
			fmt.Fprintf(w, "| read | p50 | p99 | billed reads |\n|---|---:|---:|---:|\n")
			for _, l := range append(win.Top, win.History...) {
				fmt.Fprintf(w, "| %s | %.1f ms | %.1f ms | %d |\n", l.Method, l.P50MS, l.P99MS, l.BilledReads)
			}
			fmt.Fprintf(w, "\nRankings ran over %d counters active in the hour; a ranking's billed reads are the documents it returns, whatever the number of counters.\n", win.ActiveCounters)
		}
	}
}

func likesMarkdown(w io.Writer, s *Suite) {
	if len(s.Likes) == 0 {
		return
	}
	var fn, raw *loadtest.LikesReport
	for i := range s.Likes {
		switch s.Likes[i].Mode {
		case "functions":
			fn = &s.Likes[i]
		case "raw":
			raw = &s.Likes[i]
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "**Likes** (one unique counter of 10 shards; users like and unlike it at random, a fifth of the presses doubled, every action retried with its key until definite; "+
		"raw = a Go client transaction per like that reads the member document, creates or deletes it and changes a random shard, what an app does without shardcount; "+
		"exact = the strong read and the member documents both equal the users whose last action was a like):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | users | concurrency | likes/s | p99 | commits/like | liking at the end | strong | member docs | exact |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range s.Likes {
		strong := int64(0)
		if r.Check != nil {
			strong = r.Check.Strong
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.1f ms | %s | %d | %d | %d | %s |\n", r.Mode, r.Users, r.Concurrency, r.Throughput, r.P99, perInc(&r.Report), r.Liking, strong, r.MemberDocs, exact(&r.Report))
	}
	if fn == nil || raw == nil || raw.Throughput == 0 {
		return
	}
	ratio := fn.Throughput / raw.Throughput
	commits := commitsPer(&fn.Report)
	allExact := fn.Check != nil && fn.Check.Exact && raw.Check != nil && raw.Check.Exact
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| 10 shards, c=64: likes/s through the functions ≥ 3× the raw transactions | %.2f× | %s |\n", ratio, verdict(ratio >= 3))
	fmt.Fprintf(w, "| commits per like ≤ 0.3 at c=64 | %.3f | %s |\n", commits, verdict(commits <= 0.3))
	fmt.Fprintf(w, "| every run exact | %v | %s |\n", allExact, verdict(allExact))
}

// perCadence is a lag run's roll-up operations per cadence.
func perCadence(l *loadtest.LagReport, cadenceS float64) (reads, aggs, commits, writes float64) {
	c := l.Cost
	if c == nil || l.Seconds == 0 {
		return 0, 0, 0, 0
	}
	n := l.Seconds / cadenceS
	return float64(c.RollupReads) / n, float64(c.RollupAggregations) / n, float64(c.RollupCommits) / n, float64(c.RollupWrites) / n
}

// commitsPer is a run's commits per change: as its cost counted them, or
// one each when it counted none (the raw modes).
func commitsPer(r *loadtest.Report) float64 {
	if r.Cost == nil {
		return 1
	}
	return r.Cost.CommitsPerIncrement
}

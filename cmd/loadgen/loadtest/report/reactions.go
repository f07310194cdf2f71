package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/reactions"
)

// Reactions writes the reactions table and its targets: switches through
// the functions against the raw transactions of the same run.
func Reactions(w io.Writer, runs []reactions.ReactionsReport) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "**Reactions** (one choice counter of %d shards and %d choices; users switch their reaction at random, a fifth of the taps removing it, a fifth doubled, every tap retried with its key until definite; "+
		"raw = a Go client transaction per tap that reads the member document, creates, updates or deletes it and moves the counts of a random shard (the old choice −1, the new +1, and count); "+
		"exact = the count and each choice's count, of the strong read (functions) or the shards' sums (raw), and the member documents' choices all equal the users' last reactions):\n", runs[0].Shards, len(runs[0].Choices))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | users | concurrency | switches/s | p99 | commits/switch | reacting at the end | count read | member docs | by choice (read) | exact |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range runs {
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.1f ms | %s | %d | %d | %d | %s | %s |\n", r.Mode, r.Users, r.Concurrency, r.Throughput, r.P99,
			perInc(&r.Report), r.Expected.Count, r.Read.Count, r.MemberDocs.Count, byChoice(r.Read), exact(&r.Report))
	}
	reactionTargets(w, runs)
}

// reactionTargets judges the run: does group commit beat the raw
// transaction, at few commits per switch, exactly.
func reactionTargets(w io.Writer, runs []reactions.ReactionsReport) {
	fn, raw := reactionsOf(runs, "functions"), reactionsOf(runs, "raw")
	if fn == nil || raw == nil || raw.Throughput == 0 {
		return
	}
	ratio := fn.Throughput / raw.Throughput
	commits := commitsPer(&fn.Report)
	allExact := exact(&fn.Report, &raw.Report) == "yes"
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| 10 shards, c=64: switches/s through the functions (group commit) beat the raw transactions | %.2f× | %s |\n", ratio, verdict(ratio > 1))
	fmt.Fprintf(w, "| commits per switch ≤ 0.3 at c=64 | %.3f | %s |\n", commits, verdict(commits <= 0.3))
	fmt.Fprintf(w, "| every run exact | %v | %s |\n", allExact, verdict(allExact))
}

// reactionsOf is the run of mode, if any.
func reactionsOf(runs []reactions.ReactionsReport, mode string) *reactions.ReactionsReport {
	i := slices.IndexFunc(runs, func(r reactions.ReactionsReport) bool { return r.Mode == mode })
	if i < 0 {
		return nil
	}
	return &runs[i]
}

// byChoice lists a tally's counts, by choice alphabetically ("haha 12 · like 9").
func byChoice(t reactions.Tally) string {
	parts := []string{}
	for _, c := range slices.Sorted(maps.Keys(t.Counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", c, t.Counts[c]))
	}
	return strings.Join(parts, " · ")
}

package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/feed"
)

// Feed writes the feed's table and its targets: a page read the three
// ways, and a hot page.
func Feed(w io.Writer, r *feed.Report) {
	if r == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "**A feed's page** (20 posts × 4 kinds, %d counters: likes, reactions, views, viewers; the reader's heart and reaction of each post; "+
		"each way timed over whole page loads, one after another, a new reader each for getCounters, whose counts another reader's page made warm; "+
		"billed reads as the function server counted them, or one per listener's first snapshot):\n\n", r.Page)
	fmt.Fprintln(w, "| way | calls per page | billed reads per page | p50 | p99 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, way := range r.Ways {
		fmt.Fprintf(w, "| %s | %.0f | %.1f | %.1f ms | %.1f ms |\n", way.Name, way.Calls, way.Reads, way.Stats.P50, way.Stats.P99)
	}
	fmt.Fprintf(w, "| (one getCounter, for comparison) | 1 | | %.1f ms | %.1f ms |\n", r.OneGetCounter.P50, r.OneGetCounter.P99)
	h := r.Hot
	tenths := make([]string, len(h.Reads))
	for i, v := range h.Reads {
		tenths[i] = fmt.Sprintf("%.1f", v)
	}
	fmt.Fprintf(w, "\n**A hot page**: %d new readers read the same page, %d at once (p50 %.1f ms, p99 %.1f ms); billed reads per page, by tenth of the readers in order: %s. "+
		"A counter's document was read %.2f times per `FEED_CACHE` (%s) at most, the rest of each page being its reader's member documents.\n\n",
		h.Readers, h.Concurrency, h.Stats.P50, h.Stats.P99, strings.Join(tenths, ", "), h.CounterReadsPerBound, h.FeedCache)
	one := wayNamed(r, "1 getCounters call")
	fmt.Fprintln(w, "| target | this run | |")
	fmt.Fprintln(w, "|---|---|---|")
	if one == nil {
		return
	}
	fmt.Fprintf(w, "| one call per page | %.0f | %s |\n", one.Calls, verdict(one.Calls == 1))
	fmt.Fprintf(w, "| at most 8 billed reads for a new reader's page whose counts are warm | %.1f | %s |\n", one.Reads, verdict(one.Reads <= 8))
	fmt.Fprintf(w, "| at most one read per counter per instance per `FEED_CACHE` | %.2f | %s |\n", h.CounterReadsPerBound, verdict(h.CounterReadsPerBound <= 1))
	fmt.Fprintf(w, "| p50 no worse than one getCounter | %.1f ms against %.1f ms | %s |\n", one.Stats.P50, r.OneGetCounter.P50, verdict(one.Stats.P50 <= r.OneGetCounter.P50))
}

func wayNamed(r *feed.Report, name string) *feed.Way {
	for i := range r.Ways {
		if r.Ways[i].Name == name {
			return &r.Ways[i]
		}
	}
	return nil
}

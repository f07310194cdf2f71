package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/views"
	"github.com/shardcount/shardcount/internal/distinct"
)

// Views writes the views table and its targets: a distinct counter's
// sketches against a unique counter's member documents, under the same
// load, for each population of people the views come from.
func Views(w io.Writer, runs []views.Report) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "**Views** (one counter of %d shards; each counter is given the same views, each by one of so many people at random, so with few people they come back; "+
		"distinct = a kind with `\"distinct\": true` (sketches of the shard, the hour and the day), unique = a kind with `\"unique\": true` (a member document per person); "+
		"per acknowledged view, the increments' Firestore operations as the function server counted them, bytes as sent; "+
		"kept = the counter's shards, sketches and member documents at the end, in Firestore's document sizes, index entries not counted):\n", runs[0].Shards)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| people | in flight | counter | views | views/s | p99 | people seen | read | off | commits/view | writes/view | bytes written/view | reads/view | documents kept | bytes kept |")
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		fmt.Fprintf(w, "| %d | %d | %s | %d | %.0f | %.1f ms | %d | %d | %.2f%% | %.3f | %.3f | %.0f | %.2f | %d | %d |\n", r.Viewers, r.Concurrency, r.Counter, r.OK, r.Throughput, r.P99,
			r.Seen, r.Read, 100*r.Off, r.CommitsPerView, r.WritesPerView, r.BytesPerView, r.ReadsPerView, r.Kept.Docs, r.Kept.Bytes)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | people | this run | |")
	fmt.Fprintln(w, "|---|---:|---|---|")
	for _, l := range loads(runs) {
		people := l.people
		d, u := viewsOf(runs, "distinct", l), viewsOf(runs, "unique", l)
		if d == nil || u == nil {
			continue
		}
		fmt.Fprintf(w, "| the estimate within 3 standard errors (%.2f%%) of the people seen | %d | %.2f%% off | %s |\n", 300*distinct.StandardError, people, 100*d.Off, verdict(d.Off <= 3*distinct.StandardError))
		fmt.Fprintf(w, "| the unique counter exact | %d | read %d of %d seen | %s |\n", people, u.Read, u.Seen, verdict(u.Read == u.Seen))
		fmt.Fprintf(w, "| a distinct view writes fewer documents than a unique one | %d | %.3f against %.3f | %s |\n", people, d.WritesPerView, u.WritesPerView, verdict(d.WritesPerView < u.WritesPerView))
		fmt.Fprintf(w, "| a distinct view writes fewer bytes than a unique one | %d | %.0f against %.0f | %s |\n", people, d.BytesPerView, u.BytesPerView, verdict(d.BytesPerView < u.BytesPerView))
		fmt.Fprintf(w, "| a distinct counter keeps fewer bytes than a unique one | %d | %d bytes in %d documents, against %d in %d | %s |\n",
			people, d.Kept.Bytes, d.Kept.Docs, u.Kept.Bytes, u.Kept.Docs, verdict(d.Kept.Bytes < u.Kept.Bytes))
	}
}

// load is what a run was given: views of so many people, so many in
// flight.
type load struct{ people, inFlight int }

func loadOf(r views.Report) load { return load{r.Viewers, r.Concurrency} }

// loads are the runs' loads, in order.
func loads(runs []views.Report) []load {
	var out []load
	for _, r := range runs {
		if !slices.Contains(out, loadOf(r)) {
			out = append(out, loadOf(r))
		}
	}
	return out
}

// viewsOf is the run of counter name under l, if any.
func viewsOf(runs []views.Report, name string, l load) *views.Report {
	i := slices.IndexFunc(runs, func(r views.Report) bool { return r.Counter == name && loadOf(r) == l })
	if i < 0 {
		return nil
	}
	return &runs[i]
}

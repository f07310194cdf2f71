// Package views measures what a view costs: viewers added to a distinct
// counter's sketches against the same viewers as a unique counter's
// member documents, under the same load, as the function server counts
// its writes, and what each keeps at the end.
package views

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// Counter is one way of counting viewers: a kind of COUNTER_KINDS.
type Counter struct {
	Name   string // "distinct" or "unique", for the report
	Kind   string // the counter id is "KIND:…"
	Shards int    // the kind's num_shards
}

// Load is a run's views: Views of them, each by one of People at random,
// drawn from Seed, so that two counters can be given the same views.
type Load struct {
	People, Views int
	Seed          uint64
}

// Report is one run: views of Viewers people, at random, on one counter.
type Report struct {
	loadtest.Report
	Counter string `json:"counter"`
	Viewers int    `json:"viewers"` // the people views are drawn from
	// Seen is how many people a view was acknowledged for; Read the
	// strong read at the end (an estimate, for a distinct counter), and
	// Off their relative difference.
	Seen int64   `json:"seen"`
	Read int64   `json:"read"`
	Off  float64 `json:"off"`
	// Per acknowledged view, as the function server counted its
	// increments' Firestore operations.
	CommitsPerView float64 `json:"commits_per_view"`
	WritesPerView  float64 `json:"writes_per_view"`
	BytesPerView   float64 `json:"bytes_written_per_view"`
	ReadsPerView   float64 `json:"reads_per_view"`
	// Kept is what the counter's documents hold at the end: shards,
	// sketches and member documents, in Firestore's storage sizes.
	Kept Storage `json:"kept"`
}

// Run sends the views of load from o.Concurrency workers (people come
// back, as they do), as the admin naming the member, each retried until
// its answer is definite (a view again changes nothing, so a retry needs
// no key). db is the functions' project, whose documents are measured at
// the end.
func Run(ctx context.Context, f *loadtest.Functions, db *firestore.Client, c Counter, load Load, o loadtest.Options) (Report, error) {
	id := fmt.Sprintf("%s:load-views-%d", c.Kind, time.Now().UnixNano())
	draw := rand.New(rand.NewPCG(load.Seed, 0))
	people := make([]int, load.Views)
	for i := range people {
		people[i] = draw.IntN(load.People)
	}
	o.Requests = int64(load.Views)
	var next atomic.Int64
	seen := make([]atomic.Bool, load.People)
	before, err := f.Stats(ctx)
	if err != nil {
		return Report{}, err
	}
	stats := loadtest.Run(ctx, o, func(ctx context.Context, _ int) loadtest.Outcome {
		u := people[next.Add(1)-1] // Run issues no more than o.Requests
		out := loadtest.UntilDefinite(ctx, func() loadtest.Outcome {
			status, err := f.Do(ctx, "POST", "incrementCounter", "", map[string]any{"counter_id": id, "member": fmt.Sprintf("viewer-%d", u)}, nil)
			return loadtest.Outcome{Status: status, OK: err == nil}
		})
		if out.OK {
			seen[u].Store(true)
		}
		return out
	})
	r := Report{Counter: c.Name, Viewers: load.People, Report: loadtest.Report{Scenario: "views", Mode: "functions", Concurrency: o.Concurrency, Shards: c.Shards, Counters: 1, Stats: stats}}
	for i := range seen {
		if seen[i].Load() {
			r.Seen++
		}
	}
	if r.Read, err = f.Strong(ctx, id); err != nil {
		return r, err
	}
	if r.Seen > 0 {
		r.Off = math.Abs(float64(r.Read-r.Seen)) / float64(r.Seen)
	}
	after, err := f.Stats(ctx)
	if err != nil {
		return r, err
	}
	if n := float64(stats.OK); n > 0 {
		a, b := after.Firestore["increment"], before.Firestore["increment"]
		r.CommitsPerView = float64(a.Commits-b.Commits) / n
		r.WritesPerView = float64(a.Writes-b.Writes) / n
		r.BytesPerView = float64(a.WrittenBytes-b.WrittenBytes) / n
		r.ReadsPerView = float64(a.Reads-b.Reads) / n
	}
	r.Kept, err = Kept(ctx, db.Doc("counters/"+id))
	return r, err
}

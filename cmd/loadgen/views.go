package main

import (
	"context"
	"fmt"
	"os"

	"github.com/shardcount/shardcount/internal/loadtest"
	"github.com/shardcount/shardcount/internal/loadtest/report"
	"github.com/shardcount/shardcount/internal/loadtest/views"
)

// viewCounters are the two ways of counting viewers the suite compares,
// as scripts/bench.sh declares their kinds in COUNTER_KINDS.
var viewCounters = []views.Counter{{Name: "distinct", Kind: "viewers", Shards: 10}, {Name: "unique", Kind: "likes", Shards: 10}}

// benchPeople are the populations views are drawn from: 5,000 people who
// come back (a 5 s run makes several views each), and a million who
// nearly never do.
var benchPeople = []int{5000, 1_000_000}

// viewsSuite has the same load view a distinct counter, then a unique
// one, at 64 in flight, for each of benchPeople, and keeps the runs in s:
// their cost is what they compare, which one run of each measures (the
// server counts it).
func viewsSuite(ctx context.Context, f flags, opts loadtest.Options, s *report.Suite) error {
	db, err := rawClient(ctx, f.project) // the functions' project: their documents
	if err != nil {
		return err
	}
	fns := loadtest.NewFunctions([]string{f.url}, nil, 64)
	o := opts
	o.Concurrency = 64
	s.Views = nil
	for _, people := range benchPeople {
		for _, c := range viewCounters {
			fmt.Fprintf(os.Stderr, "== views: %s counter, %d shards, %d people, concurrency 64, %s\n", c.Name, c.Shards, people, opts.Duration)
			r, err := views.Run(ctx, fns, db.Client, c, people, o)
			if err != nil {
				return err
			}
			printReport(os.Stderr, r.Report)
			s.Views = append(s.Views, r)
		}
	}
	return nil
}

// viewsOnly is `-only views suite`: the views part alone, its table
// printed; the results files are left as they are.
func viewsOnly(ctx context.Context, f flags, opts loadtest.Options) error {
	var s report.Suite
	if err := viewsSuite(ctx, f, opts, &s); err != nil {
		return err
	}
	report.Views(os.Stdout, s.Views)
	return nil
}

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/report"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/views"
)

// viewCounters are the two ways of counting viewers the suite compares,
// as scripts/bench.sh declares their kinds in COUNTER_KINDS.
var viewCounters = []views.Counter{{Name: "distinct", Kind: "viewers", Shards: 10}, {Name: "unique", Kind: "likes", Shards: 10}}

// viewLoads are the views each counter is given, the same for both (a
// seed each): 5,000 people who come back (eight views each), 10⁶ who
// nearly never do, both at 64 in flight; and 4,000 of 1,000 people (four
// each), two in flight, as a counter viewed now and then sees them.
var viewLoads = []struct {
	views.Load
	concurrency int
}{
	{views.Load{People: 5000, Views: 40_000, Seed: 1}, 64},
	{views.Load{People: 1_000_000, Views: 40_000, Seed: 2}, 64},
	{views.Load{People: 1000, Views: 4000, Seed: 3}, 2},
}

// viewsSuite has each of viewLoads view a distinct counter, then a
// unique one, and keeps the runs in s: their cost is what they compare,
// which one run of each measures (the server counts it).
func viewsSuite(ctx context.Context, f flags, opts loadtest.Options, s *report.Suite) error {
	db, err := rawClient(ctx, f.project) // the functions' project: their documents
	if err != nil {
		return err
	}
	fns := loadtest.NewFunctions([]string{f.url}, nil, 64)
	s.Views = nil
	for _, l := range viewLoads {
		o := opts
		o.Concurrency = l.concurrency
		for _, c := range viewCounters {
			fmt.Fprintf(os.Stderr, "== views: %s counter, %d shards, %d views of %d people, concurrency %d\n", c.Name, c.Shards, l.Views, l.People, l.concurrency)
			r, err := views.Run(ctx, fns, db.Client, c, l.Load, o)
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

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/shardcount/shardcount/internal/loadtest"
	"github.com/shardcount/shardcount/internal/loadtest/report"
)

// appsSuite measures what apps count with: likes against the raw
// transactions an app would write, one instance against two, and what the
// time windows cost. Each part runs when its servers were given.
func appsSuite(ctx context.Context, f flags, opts loadtest.Options, s *report.Suite,
	writes *loadtest.Functions, raw *loadtest.Raw, rolled *loadtest.Functions, lag loadtest.LagReport) error {
	step := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "== "+format+"\n", args...) }

	if host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST"); host != "" {
		const users = 1000
		step("likes: signing %d users up", users)
		tokens, err := loadtest.SignUp(ctx, host, users)
		if err != nil {
			return err
		}
		likers := map[string]loadtest.Liker{
			"functions": loadtest.NewFunctions([]string{f.url}, tokens, 64),
			"raw":       &loadtest.RawLikes{Raw: raw, Count: users},
		}
		runs := map[string][]loadtest.LikesReport{}
		for round := range s.Rounds {
			for _, mode := range []string{"functions", "raw"} {
				step("likes: %d users, 10 shards, concurrency 64, %s, round %d/%d, %s", users, mode, round+1, s.Rounds, f.duration)
				o := opts
				o.Concurrency = 64
				r, err := loadtest.Likes(ctx, likers[mode], mode, o, 10)
				if err != nil {
					return err
				}
				printReport(os.Stderr, r.Report)
				runs[mode] = append(runs[mode], r)
			}
		}
		for _, mode := range []string{"functions", "raw"} {
			s.Likes = append(s.Likes, medianLikes(runs[mode]))
		}
		step("likes: a post's first like, which creates its counter, against a later one")
		fl, err := loadtest.FirstLikes(ctx, likers["functions"].(*loadtest.Functions), 500)
		if err != nil {
			return err
		}
		s.FirstLike = &fl
	} else {
		step("likes: skipped (no FIREBASE_AUTH_EMULATOR_HOST to sign users up)")
	}

	if f.secondURL != "" {
		step("one instance or two: hot counter, 10 shards, concurrency 64, %s each", f.duration)
		o := opts
		o.Concurrency = 64
		two := loadtest.NewFunctions([]string{f.url, f.secondURL}, nil, 64)
		one, both, err := loadtest.Instances(ctx, writes, two, o)
		if err != nil {
			return err
		}
		s.Instances = &loadtest.InstancesReport{HotOne: one, HotTwo: both, RollupOne: &lag}
		if f.rollupTwoURLs != "" {
			step("one instance or two: the roll-up at 1,000 increments/s, events spread over two instances")
			o := opts
			o.Concurrency, o.Rate, o.Duration = 64, 1000, 2*f.duration
			l, err := loadtest.RollupLag(ctx, loadtest.NewFunctions(strings.Split(f.rollupTwoURLs, ","), nil, 64), o, 10, f.lagTimeout)
			if err != nil {
				return err
			}
			s.Instances.RollupTwo = &l
		}
	}

	s.Windows = &loadtest.WindowsReport{On: &lag}
	if f.noWindowsURL != "" {
		step("windows: the roll-up at 1,000 increments/s with WINDOWS=off")
		o := opts
		o.Concurrency, o.Rate, o.Duration = 64, 1000, 2*f.duration
		l, err := loadtest.RollupLag(ctx, loadtest.NewFunctions([]string{f.noWindowsURL}, nil, 64), o, 10, f.lagTimeout)
		if err != nil {
			return err
		}
		s.Windows.Off = &l
	}
	if f.rollupProject == "" {
		return errors.New("-rollup-project: the project of -rollup-url, where rankings are timed")
	}
	rolledRaw, err := rawClient(ctx, f.rollupProject)
	if err != nil {
		return err
	}
	const active = 10_000
	step("windows: topCounters over %d active counters", active)
	if s.Windows.Top, err = loadtest.TopLatency(ctx, rolled, rolledRaw, active, 30); err != nil {
		return err
	}
	s.Windows.ActiveCounters = active
	step("windows: history reads")
	s.Windows.History, err = loadtest.HistoryCost(ctx, rolled, rolledRaw, 30)
	return err
}

// medianLikes is the run of median throughput, or one that was not exact.
func medianLikes(runs []loadtest.LikesReport) loadtest.LikesReport {
	reports := make([]loadtest.Report, len(runs))
	for i, r := range runs {
		reports[i] = r.Report
	}
	m := median(reports)
	for _, r := range runs {
		if r.Report.Throughput == m.Throughput && r.Report.Seconds == m.Seconds {
			return r
		}
	}
	return runs[0]
}

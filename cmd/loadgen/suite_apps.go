package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/report"
)

// appsSuite measures what apps count with: likes and reactions against
// the raw transactions an app would write, a distinct counter's views
// against a unique one's, one instance against two, and
// what the time windows cost. Each part runs when its servers were given.
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
		o := opts
		o.Concurrency = 64
		s.Likes, err = alternate(s.Rounds, func(mode string, round int) (loadtest.LikesReport, error) {
			step("likes: %d users, 10 shards, concurrency 64, %s, round %d/%d, %s", users, mode, round+1, s.Rounds, f.duration)
			r, err := loadtest.Likes(ctx, likers[mode], mode, o, 10)
			printReport(os.Stderr, r.Report)
			return r, err
		}, func(r loadtest.LikesReport) loadtest.Report { return r.Report })
		if err != nil {
			return err
		}
		if err := reactionsSuite(ctx, f, opts, s, raw, tokens); err != nil {
			return err
		}
		step("likes: a post's first like, which creates its counter, against a later one")
		fl, err := loadtest.FirstLikes(ctx, likers["functions"].(*loadtest.Functions), 500)
		if err != nil {
			return err
		}
		s.FirstLike = &fl
	} else {
		step("likes and reactions: skipped (no FIREBASE_AUTH_EMULATOR_HOST to sign users up)")
	}

	if err := viewsSuite(ctx, f, opts, s); err != nil {
		return err
	}
	if os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") != "" {
		if err := feedSuite(ctx, f, s); err != nil {
			return err
		}
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

// alternate runs the modes functions and raw in turn, rounds times, so
// each ratio compares runs taken seconds apart, and returns the median
// run of each mode (see medianRun), functions first; report is a run's
// Report.
func alternate[R any](rounds int, run func(mode string, round int) (R, error), report func(R) loadtest.Report) ([]R, error) {
	modes := []string{"functions", "raw"}
	runs := map[string][]R{}
	for round := range rounds {
		for _, mode := range modes {
			r, err := run(mode, round)
			if err != nil {
				return nil, err
			}
			runs[mode] = append(runs[mode], r)
		}
	}
	medians := make([]R, len(modes))
	for i, mode := range modes {
		medians[i] = medianRun(runs[mode], report)
	}
	return medians, nil
}

// medianRun is the run of median throughput, or one that was not exact;
// report is a run's Report.
func medianRun[R any](runs []R, report func(R) loadtest.Report) R {
	reports := make([]loadtest.Report, len(runs))
	for i, r := range runs {
		reports[i] = report(r)
	}
	m := median(reports)
	for _, r := range runs {
		if rep := report(r); rep.Throughput == m.Throughput && rep.Seconds == m.Seconds {
			return r
		}
	}
	return runs[0]
}

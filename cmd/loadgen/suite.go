package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/instrumentload"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/report"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/instrumentstore"
)

// The markers around the results in bench/README.md.
const (
	beginResults = "<!-- results:begin (written by loadgen suite) -->"
	endResults   = "<!-- results:end -->"
)

// Modes of the increments benchmark.
const (
	modeGroup   = "functions"                  // group commit on (the default)
	modeNoGroup = "functions, no group commit" // GROUP_COMMIT=off
	modeRaw     = "raw"
)

// suite measures the tables of bench/README.md in one run, so every ratio
// compares numbers taken minutes apart on the same machine: for each shard
// count and concurrency, the modes alternate.
func suite(ctx context.Context, f flags, opts loadtest.Options) error {
	if f.rounds < 1 {
		return fmt.Errorf("-rounds %d: at least one run of each mode", f.rounds)
	}
	switch f.only {
	case "":
	case "reactions":
		return reactionsOnly(ctx, f, opts)
	case "views":
		return viewsOnly(ctx, f, opts)
	case "feed":
		return feedOnly(ctx, f)
	default:
		return fmt.Errorf("-only %q: the suite has three parts that run alone, reactions, views and feed", f.only)
	}
	raw, err := rawClient(ctx, f.suiteRawProject())
	if err != nil {
		return err
	}
	writes := loadtest.NewFunctions([]string{f.url}, nil, 64)
	targets := map[string]loadtest.Counters{modeGroup: writes, modeRaw: raw}
	modes := []string{modeGroup}
	if f.noGroupCommitURL != "" {
		targets[modeNoGroup] = loadtest.NewFunctions([]string{f.noGroupCommitURL}, nil, 64)
		modes = append(modes, modeNoGroup)
	}
	modes = append(modes, modeRaw)
	rollupURL := f.rollupURL
	if rollupURL == "" {
		rollupURL = f.url
	}
	rolled := loadtest.NewFunctions([]string{rollupURL}, nil, 64)

	s := report.Suite{
		Command:    "scripts/bench.sh" + suiteArgs(f),
		Machine:    machine(),
		RunSeconds: f.duration.Seconds(),
		Rounds:     f.rounds,
		CadenceS:   1,
	}
	step := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "== "+format+"\n", args...) }

	// Warm up: the emulator's JVM compiles its hot paths during the first
	// seconds of load, which would penalise whichever run comes first.
	step("warm-up, not recorded")
	for _, m := range modes {
		o := opts
		o.Concurrency, o.Duration = 32, 5*time.Second
		if _, err := loadtest.Increments(ctx, targets[m], "warm-up", o, loadtest.IncrementSpec{Name: "warmup", Counters: 10, Shards: 10}); err != nil {
			return err
		}
	}

	// Increments: the modes alternate, three rounds each; the run with the
	// median throughput of each mode is kept.
	for _, shards := range []int{1, 10, 100} {
		for _, c := range []int{16, 64} {
			runs := map[string][]loadtest.Report{}
			for round := range s.Rounds {
				for _, mode := range modes {
					step("increments: %d shard(s), concurrency %d, %s, round %d/%d, %s", shards, c, mode, round+1, s.Rounds, f.duration)
					o := opts
					o.Concurrency = c
					r, err := loadtest.Increments(ctx, targets[mode], mode, o, loadtest.IncrementSpec{Name: "hot", Counters: 1, Shards: shards})
					if err != nil {
						return err
					}
					printReport(os.Stderr, r)
					runs[mode] = append(runs[mode], r)
				}
			}
			for _, mode := range modes {
				s.Increments = append(s.Increments, median(runs[mode]))
			}
		}
	}

	// Strong reads: stream vs SUM vs roll-up, all on the same counter, in
	// the functions' project.
	same, err := rawClient(ctx, f.project)
	if err != nil {
		return err
	}
	for _, n := range []int{10, 100, 1000} {
		step("strong reads of %d shards", n)
		methods := []loadtest.ReadMethod{
			{Name: "stream every shard (raw)", BilledReads: func(n int) int { return n }, Read: same.Strong},
			{Name: "SUM aggregation (raw)", BilledReads: perThousand, Read: same.Sum},
			{Name: "getCounter strong (SUM)", BilledReads: perThousand, Read: writes.Strong},
			{Name: "getCounter eventual (roll-up)", BilledReads: func(int) int { return 1 }, Read: func(ctx context.Context, id string) (int64, error) {
				v, _, err := writes.Eventual(ctx, id)
				return v, err
			}},
		}
		// The counter is created through the functions and its shards
		// filled directly.
		rl, err := loadtest.Reads(ctx, same.Fill, writes.CreateCounter, n, 30, methods)
		if err != nil {
			return err
		}
		for _, r := range rl[:3] { // the eventual read has no roll-up in this project
			if r.Value != int64(n) {
				return fmt.Errorf("%s read %d of %d shards holding 1 each", r.Method, r.Value, n)
			}
		}
		s.Reads = append(s.Reads, rl...)
	}

	// Roll-up lag and cost under load, in the project with the trigger.
	step("roll-up lag: 10 shards, concurrency 64, 1,000 increments/s for %s", 2*f.duration)
	o := opts
	o.Concurrency, o.Rate, o.Duration = 64, 1000, 2*f.duration
	lag, err := loadtest.RollupLag(ctx, rolled, o, 10, f.lagTimeout)
	if err != nil {
		return err
	}
	printReport(os.Stderr, lag.Report)
	s.Lag = &lag

	if f.soak > 0 {
		step("soak: one counter, 900 increments/s for %s", f.soak)
		o := opts
		o.Concurrency, o.Rate, o.Duration = 64, 900, f.soak
		soak, err := loadtest.Soak(ctx, rolled, o, 10, f.lagTimeout)
		if err != nil {
			return err
		}
		printReport(os.Stderr, soak.Report)
		s.Soak = &soak
	}

	step("resharding: strong reads before and after 1000 -> 10 shards, increments before and after 1 -> 100")
	o = opts
	o.Concurrency, o.Duration = 64, f.duration
	reshard, err := loadtest.Reshard(ctx, writes, same, o, f.cacheWait)
	if err != nil {
		return err
	}
	s.Reshard = &reshard

	step("reconcile: one full pass over 3,000 more counters")
	sweep, err := loadtest.Sweep(ctx, writes, same, 3000)
	if err != nil {
		return err
	}
	s.Sweep = &sweep

	if err := appsSuite(ctx, f, opts, &s, writes, raw, rolled, lag); err != nil {
		return err
	}
	if f.millionURL != "" && f.million > 0 {
		// The emulator may not carry that many documents: the report says
		// what stopped it, and the rest of the suite is kept.
		m, err := million(ctx, f, opts)
		if err != nil {
			m.Error = err.Error()
			fmt.Fprintln(os.Stderr, "loadgen: the million counters stopped:", err)
		}
		s.Million = &m
	}

	// Instruments queries by shard count, each in a project of its own.
	for _, shards := range []int{1, 3, 64} {
		step("instruments: 2,000 documents, %d shard value(s)", shards)
		db, err := firestoredb.Open(ctx, fmt.Sprintf("%s-i%d", f.project, shards), firestoredb.DefaultDatabase, os.Getenv("FIRESTORE_EMULATOR_HOST"))
		if err != nil {
			return err
		}
		q, err := instrumentload.QueryLatency(ctx, instrumentstore.New(db, shards, []byte("bench")), shards, 2000, 30)
		db.Close()
		if err != nil {
			return err
		}
		s.Queries = append(s.Queries, q)
	}

	return writeSuite(f.out, &s)
}

// suiteRawProject is the emulator project of the raw baseline.
func (f flags) suiteRawProject() string { return cmp.Or(f.rawProject, f.project+"-raw") }

func perThousand(n int) int { return (n + 999) / 1000 }

// median returns the run of median throughput; a run that was not exact
// wins instead, so the table never hides one.
func median(runs []loadtest.Report) loadtest.Report {
	for _, r := range runs {
		if r.Check != nil && !r.Check.Exact {
			return r
		}
	}
	slices.SortFunc(runs, func(a, b loadtest.Report) int { return cmp.Compare(a.Throughput, b.Throughput) })
	return runs[len(runs)/2]
}

func suiteArgs(f flags) string {
	var args string
	if f.duration != 5*time.Second {
		args += " -d " + f.duration.String()
	}
	if f.rounds != 3 {
		args += fmt.Sprintf(" -rounds %d", f.rounds)
	}
	if f.soak != 3*time.Minute {
		args += " -soak " + f.soak.String()
	}
	if f.million != 200_000 {
		args += fmt.Sprintf(" -million %d", f.million)
	}
	return args
}

// writeSuite writes results.json and increments.svg into dir and replaces
// the results section of dir/README.md.
func writeSuite(dir string, s *report.Suite) error {
	if err := writeJSON(filepath.Join(dir, "results.json"), s); err != nil {
		return err
	}
	var svg, chart bytes.Buffer
	report.SVG(&svg, s)
	report.GroupCommitSVG(&chart, s)
	if err := os.WriteFile(filepath.Join(dir, "increments.svg"), svg.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "groupcommit.svg"), chart.Bytes(), 0o644); err != nil {
		return err
	}
	var md bytes.Buffer
	report.Markdown(&md, s)
	fmt.Print(md.String())

	readme := filepath.Join(dir, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	text := string(b)
	i, j := strings.Index(text, beginResults), strings.Index(text, endResults)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s … %s section", readme, beginResults, endResults)
	}
	text = text[:i+len(beginResults)] + "\n" + md.String() + "\n" + text[j:]
	return os.WriteFile(readme, []byte(text), 0o644)
}

// render rewrites the chart and the README tables from dir/results.json.
func render(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	var s report.Suite
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return writeSuite(dir, &s)
}

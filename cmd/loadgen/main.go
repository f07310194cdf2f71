// Command loadgen load-tests the counters and instruments, locally or
// deployed, and checks that the totals stay exact.
//
//	loadgen [flags] hot|spread|mixed|lag|soak|instruments
//	loadgen [flags] suite      # the tables of bench/README.md (scripts/bench.sh)
//	loadgen [flags] -only reactions suite  # one part of it (or views), printed
//	loadgen -out bench render  # rewrite them from bench/results.json, measuring nothing
//
// Scenarios:
//
//	hot          increments on one counter
//	spread       increments over -counters counters
//	mixed        increments and eventual reads (-read-ratio) on one counter
//	lag          increments at -rate while sampling the roll-up's age
//	soak         increments at -rate (e.g. 900) for -d (e.g. 3m), then the
//	             roll-up's catch-up time; samples the server's memory
//	instruments  recordInstruments and queryInstruments (-read-ratio queries)
//	likes        -users users like and unlike one unique counter at random
//	reactions    -users users switch their reaction on one choice counter
//	             (the kind "reactions" of COUNTER_KINDS) at random
//	feed         a feed's page of 20 posts read three ways (listeners,
//	             getCounter calls, one getCounters), and a hot page
//	             (kinds likes, reactions, views and viewers; readers
//	             signed up against FIREBASE_AUTH_EMULATOR_HOST)
//
// -url takes several servers, comma-separated: each request goes to one of
// them, as a deployment spreads requests over its instances. With
// AUTH=required, -users N signs N users up against the Auth emulator
// (FIREBASE_AUTH_EMULATOR_HOST) and spreads the load over them; for a
// deployment, -tokens FILE reads one ID token per line instead (or -token
// for one).
//
// With -mode raw, the same increments go straight to the Firestore emulator
// (FIRESTORE_EMULATOR_HOST, project -project) with the Go client, the way the
// seeds' distributed counter does: the baseline the functions are compared
// with. It prints live progress, then throughput, latency percentiles,
// errors by status, the exactness check and the roll-up lag; -json writes
// the same as JSON.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"

	"github.com/shardcount/shardcount/client"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/instrumentload"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/report"
)

type flags struct {
	url, mode, project, token, tokensFile, jsonOut string
	adminToken                                     string
	concurrency, shards, counters, users           int
	duration, lagTimeout                           time.Duration
	requests                                       int64
	rate, readRatio                                float64
	quiet                                          bool
	// suite
	out, rollupURL, rawProject, noGroupCommitURL string
	secondURL, rollupTwoURLs, noWindowsURL       string
	rollupProject                                string
	soak, cacheWait, feedCache                   time.Duration
	million, rounds                              int
	only                                         string
	millionURL, millionTouchURL, millionProject  string
	otelURL                                      string
}

func main() {
	var f flags
	flag.StringVar(&f.url, "url", cmp.Or(os.Getenv("LOADGEN_URL"), "http://127.0.0.1:8081"), "base URL of the functions (local or https://REGION-PROJECT.cloudfunctions.net); several, comma-separated, spread the load")
	flag.StringVar(&f.mode, "mode", "functions", "functions: through the HTTP functions; raw: straight to the Firestore emulator")
	flag.StringVar(&f.project, "project", cmp.Or(os.Getenv("GOOGLE_CLOUD_PROJECT"), "demo-shardcount"), "emulator project of -mode raw")
	flag.StringVar(&f.token, "token", os.Getenv("FIREBASE_ID_TOKEN"), "Firebase ID token for AUTH=required (or FIREBASE_ID_TOKEN)")
	flag.StringVar(&f.adminToken, "admin-token", os.Getenv("SHARDCOUNT_ADMIN_TOKEN"), "ID token of an admin identity that creates the counters (or SHARDCOUNT_ADMIN_TOKEN); with -users, one is minted against the Auth emulator")
	flag.StringVar(&f.tokensFile, "tokens", "", "file of Firebase ID tokens, one per line: the load is spread over their users")
	flag.IntVar(&f.users, "users", 0, "sign this many users up against the Auth emulator (FIREBASE_AUTH_EMULATOR_HOST) and spread the load over them")
	flag.IntVar(&f.concurrency, "c", 16, "concurrent requests")
	flag.DurationVar(&f.duration, "d", 10*time.Second, "how long to run")
	flag.Int64Var(&f.requests, "n", 0, "stop after this many requests instead (0: use -d)")
	flag.Float64Var(&f.rate, "rate", 0, "at most this many requests per second (0: as fast as possible)")
	flag.IntVar(&f.shards, "shards", 10, "shards of each counter created")
	flag.IntVar(&f.counters, "counters", 100, "counters of the spread scenario")
	flag.Float64Var(&f.readRatio, "read-ratio", 0.2, "share of reads (mixed) or queries (instruments)")
	flag.DurationVar(&f.lagTimeout, "lag-timeout", 30*time.Second, "how long to wait for the roll-up to catch up")
	flag.StringVar(&f.jsonOut, "json", "", "also write the results to this JSON file")
	flag.BoolVar(&f.quiet, "quiet", false, "no live progress")
	flag.StringVar(&f.out, "out", "bench", "suite: directory of results.json, increments.svg and README.md")
	flag.StringVar(&f.rollupURL, "rollup-url", "", "suite: functions whose project has the roll-up trigger (default -url)")
	flag.StringVar(&f.rawProject, "raw-project", "", "suite: emulator project of the raw baseline (default -project + \"-raw\")")
	flag.StringVar(&f.noGroupCommitURL, "url-no-group-commit", "", "suite: functions with GROUP_COMMIT=off, in -project (empty: skip that mode)")
	flag.StringVar(&f.secondURL, "url-second", "", "suite: a second function server in -project, for the two-instance runs (empty: skip them)")
	flag.StringVar(&f.rollupTwoURLs, "rollup-urls-two", "", "suite: two function servers, comma-separated, whose roll-up events are spread over both (empty: skip)")
	flag.StringVar(&f.noWindowsURL, "rollup-url-no-windows", "", "suite: functions with WINDOWS=off and the roll-up trigger (empty: skip)")
	flag.StringVar(&f.rollupProject, "rollup-project", "", "suite: emulator project of -rollup-url, where rankings and histories are timed")
	flag.IntVar(&f.rounds, "rounds", 3, "suite: runs of each mode per measurement, alternating, the median kept")
	flag.StringVar(&f.only, "only", "", "suite: run one part alone and print its table, writing no results: reactions, views or feed")
	flag.DurationVar(&f.feedCache, "feed-cache", time.Second, "feed, suite: FEED_CACHE of the servers")
	flag.DurationVar(&f.soak, "soak", 3*time.Minute, "suite: length of the soak run (0: skip it)")
	flag.DurationVar(&f.cacheWait, "cache-wait", 3*time.Second, "suite: SHARD_COUNT_CACHE of the servers, plus a margin")
	flag.IntVar(&f.million, "million", 200_000, "million, suite: counters bulk-created for the scale benchmark (0.1% of them active); at 1000000 the emulator on a 2-core machine answers commits in over 10 s (bench/README.md)")
	flag.StringVar(&f.millionURL, "million-url", "", "suite: functions of -million-project with the roll-up trigger, for the scale benchmark (empty: skip it)")
	flag.StringVar(&f.millionTouchURL, "million-touch-url", "", "million, suite: a second function server of -million-project whose memory is measured")
	flag.StringVar(&f.millionProject, "million-project", "demo-bench-million", "million, suite: emulator project of the scale benchmark")
	flag.StringVar(&f.otelURL, "url-otel", "", "overhead: functions with telemetry on (-url: with it off)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: loadgen [flags] hot|spread|mixed|lag|soak|instruments|likes|reactions|feed|million|overhead|suite")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, f, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags, scenario string) error {
	opts := loadtest.Options{Concurrency: f.concurrency, Duration: f.duration, Requests: f.requests, Rate: f.rate}
	if !f.quiet {
		opts.Progress = os.Stderr
		st, _ := os.Stderr.Stat()
		opts.Terminal = st.Mode()&os.ModeCharDevice != 0
	}
	switch scenario {
	case "suite":
		return suite(ctx, f, opts)
	case "overhead":
		if f.otelURL == "" {
			return errors.New("overhead: -url-otel names the functions with telemetry on")
		}
		o := opts
		o.Concurrency = 64
		r, err := loadtest.Overhead(ctx, loadtest.NewFunctions([]string{f.url}, nil, 64), loadtest.NewFunctions([]string{f.otelURL}, nil, 64), o, 1, 6)
		var md strings.Builder
		report.Overhead(&md, r, strings.TrimSpace(os.Getenv("BENCH_COMMAND")+" scripts/bench-telemetry.sh"))
		fmt.Print(md.String())
		return err
	case "million":
		f.millionURL = f.url
		r, err := million(ctx, f, opts)
		var md strings.Builder
		report.Million(&md, &r)
		fmt.Print(md.String())
		if err == nil && f.jsonOut != "" {
			err = writeJSON(f.jsonOut, r)
		}
		return err
	case "render":
		return render(f.out)
	}
	var tokens []string
	var err error
	if f.mode != "raw" {
		if tokens, err = f.tokens(ctx); err != nil {
			return err
		}
	}
	fns := loadtest.NewFunctions(strings.Split(f.url, ","), tokens, f.concurrency)
	if f.mode != "raw" {
		if fns.Admin, err = f.admin(ctx); err != nil {
			return err
		}
	}
	var counters loadtest.Counters = fns
	if f.mode == "raw" {
		raw, err := rawClient(ctx, f.project)
		if err != nil {
			return err
		}
		counters = raw
	} else if f.mode != "functions" {
		return fmt.Errorf("-mode must be functions or raw")
	}
	rollup := f.mode == "functions"

	var result any
	switch scenario {
	case "likes":
		var l loadtest.Liker = fns
		if f.mode == "raw" {
			l = &loadtest.RawLikes{Raw: counters.(*loadtest.Raw), Count: max(f.users, f.concurrency)}
		}
		var r loadtest.LikesReport
		r, err = loadtest.Likes(ctx, l, f.mode, opts, f.shards)
		printReport(os.Stdout, r.Report)
		fmt.Printf("users %d, liking at the end %d, member documents %d\n", r.Users, r.Liking, r.MemberDocs)
		result = r
		if err == nil && !r.Check.Exact {
			err = errors.New("the likes are NOT exact")
		}
	case "reactions":
		result, err = reactionsScenario(ctx, f, opts, fns, counters)
	case "feed":
		return feedOnly(ctx, f)
	case "hot", "spread", "mixed":
		spec := loadtest.IncrementSpec{Name: scenario, Counters: 1, Shards: f.shards, Rollup: rollup, LagTimeout: f.lagTimeout}
		if scenario == "spread" {
			spec.Counters = f.counters
		}
		if scenario == "mixed" {
			spec.ReadRatio = f.readRatio
		}
		var r loadtest.Report
		r, err = loadtest.Increments(ctx, counters, f.mode, opts, spec)
		printReport(os.Stdout, r)
		result = r
	case "lag":
		var r loadtest.LagReport
		r, err = loadtest.RollupLag(ctx, fns, opts, f.shards, f.lagTimeout)
		printReport(os.Stdout, r.Report)
		fmt.Printf("roll-up age during the run: p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d samples)\n", r.LagP50MS, r.LagP99MS, r.LagMaxMS, r.Samples)
		result = r
	case "soak":
		var r loadtest.SoakReport
		r, err = loadtest.Soak(ctx, fns, opts, f.shards, f.lagTimeout)
		printReport(os.Stdout, r.Report)
		fmt.Printf("server memory (MiB, every %.0f s): %.1f\n", r.RSSEvery, r.RSSMiB)
		result = r
	case "instruments":
		r := instrumentload.InstrumentsMix(ctx, fns, opts, f.readRatio)
		printReport(os.Stdout, r)
		result = r
	default:
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	if err != nil {
		return err
	}
	if f.jsonOut != "" {
		if err := writeJSON(f.jsonOut, result); err != nil {
			return err
		}
	}
	if r, ok := result.(loadtest.Report); ok && r.Check != nil && !r.Check.Exact {
		return errors.New("the totals are NOT exact")
	}
	return nil
}

func printReport(w io.Writer, r loadtest.Report) {
	fmt.Fprintf(w, "%s (%s): %d requests in %.1f s, %d ok, %.0f ok/s, concurrency %d\n",
		r.Scenario, r.Mode, r.Requests, r.Seconds, r.OK, r.Throughput, r.Concurrency)
	fmt.Fprintf(w, "latency: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms\n", r.P50, r.P95, r.P99)
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "errors by status: %v\n", r.Errors)
	}
	if c := r.Cost; c != nil {
		fmt.Fprintf(w, "cost (server's own count): %d commits, %.3f per increment; %d roll-up events, %.3f per increment\n",
			c.Commits, c.CommitsPerIncrement, c.RollupEvents, c.RollupEventsPerIncrement)
	}
	if c := r.Check; c != nil {
		verdict := "EXACT"
		if !c.Exact {
			verdict = "NOT EXACT"
		}
		fmt.Fprintf(w, "check: acknowledged %d, strong read %d: %s\n", c.Acknowledged, c.Strong, verdict)
		if c.RollupLagMS != nil {
			if *c.RollupLagMS < 0 {
				fmt.Fprintln(w, "roll-up: did not catch up within -lag-timeout")
			} else {
				fmt.Fprintf(w, "roll-up: caught up %.0f ms after the last increment\n", *c.RollupLagMS)
			}
		}
	}
}

func rawClient(ctx context.Context, project string) (*loadtest.Raw, error) {
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		return nil, errors.New("-mode raw needs FIRESTORE_EMULATOR_HOST (it measures the emulator itself)")
	}
	c, err := firestore.NewClient(ctx, project)
	if err != nil {
		return nil, err
	}
	return loadtest.NewRaw(c), nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// tokens are the ID tokens to spread the load over: -tokens, -users or
// -token.
func (f flags) tokens(ctx context.Context) ([]string, error) {
	switch {
	case f.tokensFile != "":
		b, err := os.ReadFile(f.tokensFile)
		if err != nil {
			return nil, err
		}
		var out []string
		for line := range strings.Lines(string(b)) {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s holds no token", f.tokensFile)
		}
		return out, nil
	case f.users > 0:
		host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")
		if host == "" {
			return nil, errors.New("-users signs users up against the Auth emulator: set FIREBASE_AUTH_EMULATOR_HOST (for a deployment, use -tokens FILE)")
		}
		return loadtest.SignUp(ctx, host, f.users)
	case f.token != "":
		return []string{f.token}, nil
	}
	return nil, nil
}

// admin is the ID token counters are created with: -admin-token, or with
// -users an admin identity of the Auth emulator (the Admin SDK's custom
// token, as an app's backend has; see package client).
func (f flags) admin(ctx context.Context) (string, error) {
	if f.adminToken != "" || f.users == 0 {
		return f.adminToken, nil
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: f.project})
	if err != nil {
		return "", err
	}
	authClient, err := app.Auth(ctx)
	if err != nil {
		return "", err
	}
	return client.New(f.url, "loadgen", "loadgen-admin", authClient).IDToken(ctx)
}

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/internal/config"
)

// million runs the scale benchmark of reconcile's activity index against
// -million-url (with the roll-up trigger) and -million-touch-url, whose
// servers run with the default ROLLUP_CADENCE and FIRESTORE_DEADLINE.
func million(ctx context.Context, f flags, opts loadtest.Options) (loadtest.MillionReport, error) {
	if f.millionTouchURL == "" {
		return loadtest.MillionReport{}, fmt.Errorf("-million-touch-url: the server whose memory is measured")
	}
	raw, err := rawClient(ctx, f.millionProject)
	if err != nil {
		return loadtest.MillionReport{}, err
	}
	defaults, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return loadtest.MillionReport{}, err
	}
	spec := loadtest.MillionSpec{Counters: f.million, Active: max(1, f.million/1000), Incremented: f.million / 10,
		Writers: 4, Settle: defaults.ReconcileSettle()}
	fmt.Fprintf(os.Stderr, "== a million counters: %d bulk-created, %d active for %s, then reconcile, rankings, and %d touched\n",
		spec.Counters, spec.Active, 4*f.duration, spec.Counters)
	o := opts
	// A steady 200 increments a second: each active counter changes every
	// few seconds, and the emulator (which delivers trigger events one at
	// a time) keeps up, so the lag measured is the roll-up's own.
	o.Concurrency, o.Duration, o.Rate = 64, 4*f.duration, 200
	start := time.Now()
	r, err := loadtest.Million(ctx, loadtest.NewFunctions([]string{f.millionURL}, nil, 64),
		loadtest.NewFunctions([]string{f.millionTouchURL}, nil, 64), raw, o, spec)
	fmt.Fprintf(os.Stderr, "== a million counters: done in %s\n", time.Since(start).Round(time.Second))
	return r, err
}

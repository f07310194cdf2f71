package core

import (
	"context"
	"strconv"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/windows"
	"github.com/shardcount/shardcount/internal/wire"
)

// topReads bounds what one topCounters reads: a page of a ranking, or a
// round of a rolling window's (each round spends a token of top).
const topReads = maxListLimit

// Rolling windows: at most maxRollingLimit counters, each round reading
// two rankings to a depth and summing each candidate, in at most
// maxRollingRounds rounds of growing depth, each paid by a token of top
// per topReads of rollingReads: the most a round reads, three rankings
// while a current bucket holds buckets of the version before carries
// (windowstore's upgrade.go, whose look for them is the instance's own
// read), and a sum a candidate (a list more for a round read late, in the
// next bucket: beyond this only while those buckets are current too).
const (
	maxRollingDepth  = 25
	maxRollingLimit  = maxRollingDepth
	maxRollingRounds = 3
)

// rollingReads bounds what one round of a rolling window reads at depth.
func rollingReads(depth int) int { return 6 * depth }

var rollingWindows = map[string]windows.Rolling{windows.LastHour.Name: windows.LastHour, windows.LastDay.Name: windows.LastDay}

// TopCounters ranks the ranked counters (of one kind, or by one choice of
// a choice kind) by their count in a window: the current or previous
// minute, hour or day, the last 60 minutes or 24 hours (rolling), by
// total, or what is rising now.
func (core *Core) TopCounters(ctx context.Context, caller Caller, body wire.TopCountersRequest) (wire.TopCountersResponse, error) {
	ctx = ledger.WithLabel(ctx, "read")
	limit, err := limitOf(body.Limit, 10)
	if err != nil {
		return wire.TopCountersResponse{}, err
	}
	kind, choice := deref(body.Kind), deref(body.Choice)
	declared, ok := core.cfg.Kinds[kind]
	switch {
	case kind != "" && !ok:
		return wire.TopCountersResponse{}, errs.Invalid("kind", "%q is not a kind of COUNTER_KINDS", kind)
	case body.Choice != nil && !declared.Offers(choice):
		return wire.TopCountersResponse{}, errs.Invalid("choice", "%q is not a choice of kind %q (choice goes with a kind of choices)", choice, kind)
	}
	window := deref(body.Window)
	if err := declared.Mode().RanksIn(kind, window); kind != "" && window != "" && err != nil {
		return wire.TopCountersResponse{}, err
	}
	resp := wire.TopCountersResponse{Window: window, Kind: kind, Choice: choice}
	now := core.now()
	g, start := windows.Granularity(""), time.Time{}
	rolling, isRolling := rollingWindows[window]
	switch {
	case window == "rising":
		if body.Previous != nil || body.Choice != nil {
			return wire.TopCountersResponse{}, errs.Invalid("window", "rising goes without previous or choice")
		}
		if core.cfg.Windows == nil {
			return wire.TopCountersResponse{}, errs.New(errs.FailedPrecondition, "window: the roll-up keeps no windows (WINDOWS=off), which rising scores")
		}
		return core.rising(ctx, caller, resp, limit, kind)
	case window == "all" || isRolling:
		if body.Previous != nil {
			return wire.TopCountersResponse{}, errs.Invalid("previous", "goes with window minute, hour or day")
		}
	case window == "":
		return wire.TopCountersResponse{}, errs.Invalid("window", "is required: minute, hour, day, last_hour, last_day, all or rising")
	default:
		if g, err = windows.Parse("window", window); err != nil {
			return wire.TopCountersResponse{}, errs.Invalid("window", "must be \"minute\", \"hour\", \"day\", \"last_hour\", \"last_day\", \"all\" or \"rising\"")
		}
		start = core.cfg.Calendar.Window(g, now, body.Previous != nil && *body.Previous)
		resp.Start = start.Format(time.RFC3339)
	}
	if (window != "all" || choice != "") && core.cfg.Windows == nil {
		return wire.TopCountersResponse{}, errs.New(errs.FailedPrecondition, "window: the roll-up keeps no windows (WINDOWS=off), nor a choice's totals; window=all ranks by total")
	}
	var ranked []windows.Ranked
	if isRolling {
		if limit > maxRollingLimit {
			return wire.TopCountersResponse{}, errs.Invalid("limit", "must be at most %d for a rolling window", maxRollingLimit)
		}
		resp.Start = rolling.Start(core.cfg.Calendar, now).Format(time.RFC3339)
		var exact bool
		if ranked, exact, err = core.rollingTop(ctx, caller, rolling.Of(choice), now, limit, kind); err != nil {
			return wire.TopCountersResponse{}, err
		}
		resp.Exact = &exact
	} else {
		if err := core.allow(ctx, caller, ratelimit.Top, 1); err != nil {
			return wire.TopCountersResponse{}, err
		}
		if window == "all" && choice != "" {
			g, start = windows.AllTime, windows.AllTimeStart // a choice's total is a bucket of its own
		}
		if ranked, err = core.windows.Top(ctx, g.Of(choice), start, limit, kind, declared.Mode().Estimates()); err != nil {
			return wire.TopCountersResponse{}, err
		}
	}
	resp.Counters = make([]wire.RankedCounter, len(ranked))
	for i, r := range ranked {
		resp.Counters[i] = wire.RankedCounter{CounterID: r.CounterID, Count: r.Count}
	}
	return resp, nil
}

// risingDepth is the depth of the lists rising takes its candidates from
// (the last hour's, the current and previous hour by rise); risingReads
// bounds what it reads: those lists (three of the last hour's while
// buckets of the version before carries are current), and two
// aggregations a candidate.
const risingDepth = 25

func risingReads(depth int) int { return 15 * depth }

// rising ranks what is rising now (windows.RisingNow), at most
// maxRollingLimit counters, for tokens of top per topReads of what it
// reads at most.
func (core *Core) rising(ctx context.Context, caller Caller, resp wire.TopCountersResponse, limit int, kind string) (wire.TopCountersResponse, error) {
	if limit > maxRollingLimit {
		return wire.TopCountersResponse{}, errs.Invalid("limit", "must be at most %d for rising", maxRollingLimit)
	}
	if err := core.spendTop(ctx, caller, "rising", risingReads(risingDepth)); err != nil {
		return wire.TopCountersResponse{}, err
	}
	r := windows.RisingNow
	scored, exact, candidates, err := core.windows.Rising(ctx, r, core.now(), risingDepth, limit, kind)
	if err != nil {
		return wire.TopCountersResponse{}, err
	}
	resp.Exact = &exact
	resp.Rising = &wire.RisingParameters{Prior: r.Prior, BaselineHours: r.BaselineHours, Candidates: candidates}
	resp.Counters = make([]wire.RankedCounter, len(scored))
	for i, s := range scored {
		resp.Counters[i] = wire.RankedCounter{CounterID: s.CounterID, Count: s.Count, Baseline: &s.Baseline, Score: &s.Score}
	}
	return resp, nil
}

// rollingTop ranks a rolling window in rounds of growing depth until the
// answer is exact, each round paid by tokens of top: at most
// maxRollingRounds rounds. An answer still not exact holds the counters
// it is sure of, first; so does one whose deeper round could not be paid
// for or failed (its error is the answer only in the first round).
func (core *Core) rollingTop(ctx context.Context, caller Caller, r windows.Rolling, now time.Time, limit int, kind string) ([]windows.Ranked, bool, error) {
	var ranked []windows.Ranked
	exact := false
	for round, depth := range rollingDepths(limit) {
		err := core.spendTop(ctx, caller, r.Name+" of limit "+strconv.Itoa(limit), rollingReads(depth))
		var deeper []windows.Ranked
		if err == nil {
			deeper, exact, err = core.windows.RollingTop(ctx, r, now, depth, limit, kind)
		}
		switch {
		case err != nil && round == 0:
			return nil, false, err
		case err != nil:
			return ranked, false, nil
		}
		if ranked = deeper; exact {
			break
		}
	}
	return ranked, exact, nil
}

// rollingDepths are a rolling window's rounds' depths: from limit, twice
// as deep each, the last at full depth (a limit of 1: 1, 2, 25).
func rollingDepths(limit int) []int {
	depths := []int{limit}
	for d := limit; d < maxRollingDepth && len(depths) < maxRollingRounds; depths = append(depths, d) {
		if d = min(2*d, maxRollingDepth); len(depths) == maxRollingRounds-1 {
			d = maxRollingDepth
		}
	}
	return depths
}

// spendTop spends the tokens of top reading reads costs (spendAtOnce).
func (core *Core) spendTop(ctx context.Context, caller Caller, what string, reads int) error {
	return core.spendAtOnce(ctx, caller, ratelimit.Top, "window", (reads+topReads-1)/topReads, "%s", what)
}

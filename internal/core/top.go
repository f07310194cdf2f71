package core

import (
	"context"
	"slices"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/windows"
)

// topReads bounds what one topCounters reads: a page of a ranking, or a
// round of a rolling window's (each round spends a token of top).
const topReads = maxListLimit

// Rolling windows: at most maxRollingLimit counters, each round reading
// two rankings to a depth and summing each candidate, in at most
// maxRollingRounds rounds of growing depth, each paid by a token of top
// per topReads of rollingReads: the most a round reads, three rankings
// and two aggregations while a current bucket holds buckets of the
// version before carries (windowstore's upgrade.go).
const (
	maxRollingDepth  = 25
	maxRollingLimit  = maxRollingDepth
	maxRollingRounds = 3
)

// rollingReads bounds what one round of a rolling window reads at depth.
func rollingReads(depth int) int { return 6*depth + 2 }

// TopCountersRequest is the input of topCounters.
type TopCountersRequest struct {
	// Window is minute, hour, day (the current bucket, or the last
	// complete one with Previous), last_hour or last_day (the last 60
	// minutes or 24 hours, rolling) or all (by total).
	Window   *string `json:"window"`
	Limit    *int64  `json:"limit"`
	Previous *bool   `json:"previous"`
	// Kind ranks the counters of one kind (COUNTER_KINDS) only, and
	// Choice (of a choice kind) by the count of that choice.
	Kind   *string `json:"kind"`
	Choice *string `json:"choice"`
}

// TopCountersResponse ranks counters, highest count first, ties by id.
type TopCountersResponse struct {
	Window string `json:"window"`
	Kind   string `json:"kind,omitempty"`
	Choice string `json:"choice,omitempty"`
	// Start is the start of the window ranked (absent for all).
	Start    string          `json:"start,omitempty"`
	Counters []RankedCounter `json:"counters"`
	// Exact, for a rolling window: whether no other counter can rank
	// among these (almost always; see docs/guides/trending.md). When
	// false, Counters holds only those sure of their place, first. For
	// rising: whether no counter left out can score above the last one
	// listed; when false, Counters are the best of those scored.
	Exact *bool `json:"exact,omitempty"`
	// Rising names the parameters of window=rising.
	Rising *RisingParameters `json:"rising,omitempty"`
}

// RisingParameters are what a rising ranking scored with
// (docs/design/windows.md): score = (last hour − λ) / √(λ + prior), λ the
// mean per hour of the baseline hours before.
type RisingParameters struct {
	Prior         float64 `json:"prior"`
	BaselineHours int     `json:"baseline_hours"`
	// Candidates is how many counters were scored: those a ranking of the
	// last hour reads, and the first by rise of the current and the
	// previous hour.
	Candidates int `json:"candidates"`
}

// RankedCounter is one counter of a ranking: of a rising one, Count is
// its last 60 minutes', Baseline its mean per hour before, and Score how
// far above it that is.
type RankedCounter struct {
	CounterID string   `json:"counter_id"`
	Count     int64    `json:"count"`
	Baseline  *float64 `json:"baseline_per_hour,omitempty"`
	Score     *float64 `json:"score,omitempty"`
}

var rollingWindows = map[string]windows.Rolling{windows.LastHour.Name: windows.LastHour, windows.LastDay.Name: windows.LastDay}

// TopCounters ranks the ranked counters (of one kind, or by one choice of
// a choice kind) by their count in a window: the current or previous
// minute, hour or day, the last 60 minutes or 24 hours (rolling), by
// total, or what is rising now.
func (core *Core) TopCounters(ctx context.Context, caller Caller, body TopCountersRequest) (TopCountersResponse, error) {
	ctx = ledger.WithLabel(ctx, "read")
	limit, err := limitOf(body.Limit, 10)
	if err != nil {
		return TopCountersResponse{}, err
	}
	kind, choice := deref(body.Kind), deref(body.Choice)
	declared, ok := core.cfg.Kinds[kind]
	switch {
	case kind != "" && !ok:
		return TopCountersResponse{}, errs.Invalid("kind", "%q is not a kind of COUNTER_KINDS", kind)
	case body.Choice != nil && !slices.Contains(declared.Choices, choice):
		return TopCountersResponse{}, errs.Invalid("choice", "%q is not a choice of kind %q (choice goes with a kind of choices)", choice, kind)
	}
	window := deref(body.Window)
	if err := declared.Mode().RanksIn(kind, window); kind != "" && window != "" && err != nil {
		return TopCountersResponse{}, err
	}
	resp := TopCountersResponse{Window: window, Kind: kind, Choice: choice}
	now := core.now()
	var g windows.Granularity
	var start time.Time
	rolling, isRolling := rollingWindows[window]
	switch {
	case window == "rising":
		if body.Previous != nil || body.Choice != nil {
			return TopCountersResponse{}, errs.Invalid("window", "rising goes without previous or choice")
		}
		if core.cfg.Windows == nil {
			return TopCountersResponse{}, errs.New(errs.FailedPrecondition, "window: the roll-up keeps no windows (WINDOWS=off), which rising scores")
		}
		return core.rising(ctx, caller, resp, limit, kind)
	case window == "all" || isRolling:
		if body.Previous != nil {
			return TopCountersResponse{}, errs.Invalid("previous", "goes with window minute, hour or day")
		}
	case window == "":
		return TopCountersResponse{}, errs.Invalid("window", "is required: minute, hour, day, last_hour, last_day, all or rising")
	default:
		if g, err = windows.Parse("window", window); err != nil {
			return TopCountersResponse{}, errs.Invalid("window", "must be \"minute\", \"hour\", \"day\", \"last_hour\", \"last_day\", \"all\" or \"rising\"")
		}
		start = core.cfg.Calendar.Window(g, now, body.Previous != nil && *body.Previous)
		resp.Start = start.Format(time.RFC3339)
	}
	if (window != "all" || choice != "") && core.cfg.Windows == nil {
		return TopCountersResponse{}, errs.New(errs.FailedPrecondition, "window: the roll-up keeps no windows (WINDOWS=off), nor a choice's totals; window=all ranks by total")
	}
	var ranked []windows.Ranked
	if isRolling {
		if limit > maxRollingLimit {
			return TopCountersResponse{}, errs.Invalid("limit", "must be at most %d for a rolling window", maxRollingLimit)
		}
		resp.Start = rolling.Start(core.cfg.Calendar, now).Format(time.RFC3339)
		var exact bool
		if ranked, exact, err = core.rollingTop(ctx, caller, rolling.Of(choice), now, limit, kind); err != nil {
			return TopCountersResponse{}, err
		}
		resp.Exact = &exact
	} else {
		if err := core.allow(ctx, caller, ratelimit.Top, 1); err != nil {
			return TopCountersResponse{}, err
		}
		if window == "all" && choice != "" {
			g, start = windows.AllTime, windows.AllTimeStart // a choice's total is a bucket of its own
		}
		if ranked, err = core.windows.Top(ctx, g.Of(choice), start, limit, kind); err != nil {
			return TopCountersResponse{}, err
		}
	}
	resp.Counters = make([]RankedCounter, len(ranked))
	for i, r := range ranked {
		resp.Counters[i] = RankedCounter{CounterID: r.CounterID, Count: r.Count}
	}
	return resp, nil
}

// risingDepth is the depth of the lists a rising ranking takes its
// candidates from: a ranking of the last hour's, and the current and the
// previous hour by rise.
const risingDepth = 25

// risingReads bounds what a rising ranking reads at depth: the lists
// (three of the last hour's while buckets of the version before carries
// are current, and two by rise), and two aggregations per candidate.
func risingReads(depth int) int { return 15*depth + 2 }

// rising ranks what is rising now (windows.RisingNow), at most
// maxRollingLimit counters, for tokens of top per topReads of what it
// reads at most.
func (core *Core) rising(ctx context.Context, caller Caller, resp TopCountersResponse, limit int, kind string) (TopCountersResponse, error) {
	if limit > maxRollingLimit {
		return TopCountersResponse{}, errs.Invalid("limit", "must be at most %d for rising", maxRollingLimit)
	}
	tokens := (risingReads(risingDepth) + topReads - 1) / topReads
	if most := core.limiter.Burst(ratelimit.Top, caller.budgetKeys()...); !caller.Admin && tokens > most {
		return TopCountersResponse{}, errs.Invalid("window", "rising spends %d tokens of top: this deployment's budget (RATE_LIMITS) allows at most %d at once", tokens, most)
	}
	if err := core.allow(ctx, caller, ratelimit.Top, tokens); err != nil {
		return TopCountersResponse{}, err
	}
	r := windows.RisingNow
	scored, exact, candidates, err := core.windows.Rising(ctx, r, core.now(), risingDepth, limit, kind)
	if err != nil {
		return TopCountersResponse{}, err
	}
	resp.Exact = &exact
	resp.Rising = &RisingParameters{Prior: r.Prior, BaselineHours: r.BaselineHours, Candidates: candidates}
	resp.Counters = make([]RankedCounter, len(scored))
	for i, s := range scored {
		resp.Counters[i] = RankedCounter{CounterID: s.CounterID, Count: s.Count, Baseline: &s.Baseline, Score: &s.Score}
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
	for depth, round := limit, 0; round < maxRollingRounds && !exact; depth, round = min(2*depth, maxRollingDepth), round+1 {
		err := core.allow(ctx, caller, ratelimit.Top, (rollingReads(depth)+topReads-1)/topReads)
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
		ranked = deeper
		if depth == maxRollingDepth {
			break
		}
	}
	return ranked, exact, nil
}

package core

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/rfc3339"
	"github.com/shardcount/shardcount/internal/windows"
)

// GetCounterRequest is the input of getCounter (its query string, or a
// callable request's data).
type GetCounterRequest struct {
	CounterID   *string `json:"counter_id"`
	Consistency *string `json:"consistency"`
	// History asks for the counter's minute, hour or day buckets from From
	// to To (RFC 3339; To defaults to now, From to a span before To).
	History *string `json:"history"`
	From    *string `json:"from"`
	To      *string `json:"to"`
	// Window, of a distinct counter: last_7_days or last_30_days, its
	// distinct members over those days (today's included).
	Window *string `json:"window"`
}

// GetCounterResponse is the answer of getCounter.
type GetCounterResponse struct {
	CounterID   string `json:"counter_id"`
	Count       int64  `json:"count"`
	NumShards   int    `json:"num_shards"`
	Consistency string `json:"consistency"`
	// AsOf is the time the count is exact at (RFC 3339, UTC).
	AsOf   string `json:"as_of"`
	Unique bool   `json:"unique,omitempty"`
	// Member tells a signed-in caller whether they are a member of a
	// unique counter, and Choice their choice on a choice counter.
	Member *bool   `json:"member,omitempty"`
	Choice *string `json:"choice,omitzero"`
	// Counts are a choice counter's members by choice, as exact as Count.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Estimate: Count is a distinct counter's estimate of its distinct
	// members, with its relative StandardError.
	Estimate      bool    `json:"estimate,omitempty"`
	StandardError float64 `json:"standard_error,omitempty"`
	// Reshard is the last change of the shard count (eventual reads).
	Reshard *ReshardStatus `json:"reshard,omitempty"`
	// Window and From, with window: the days whose distinct members
	// Count estimates, from From on.
	Window string `json:"window,omitempty"`
	From   string `json:"from,omitempty"`
	// History is the count of each bucket asked for, oldest first; a
	// bucket with nothing counted is 0.
	History []HistoryPoint `json:"history,omitempty"`
}

// HistoryPoint is one bucket of a counter's history.
type HistoryPoint struct {
	Start string `json:"start"`
	Count int64  `json:"count"`
	// Counts, of a choice counter: each choice's change in the bucket.
	Counts map[string]int64 `json:"counts,omitempty"`
}

// ReshardStatus describes the last change of a counter's shard count.
type ReshardStatus struct {
	From       int    `json:"from"`
	To         int    `json:"to"`
	At         string `json:"at"`
	Merging    bool   `json:"merging"`
	MergeUntil string `json:"merge_until,omitempty"`
	MergedAt   string `json:"merged_at,omitempty"`
}

func reshardStatus(r counter.Reshard) *ReshardStatus {
	if r.At.IsZero() {
		return nil
	}
	return &ReshardStatus{From: r.From, To: r.To, At: rfc3339Time(r.At), Merging: r.Merging(),
		MergeUntil: rfc3339Time(r.MergeUntil), MergedAt: rfc3339Time(r.MergedAt)}
}

func rfc3339Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// historyRange is a validated history request, or, with union, a
// window of a distinct counter's days.
type historyRange struct {
	g      windows.Granularity
	starts []time.Time
	union  string
}

func (r GetCounterRequest) validate(cal windows.Calendar, now time.Time) (id, consistency string, h *historyRange, err error) {
	if id, err = requiredCounterID(r.CounterID); err != nil {
		return "", "", nil, err
	}
	switch consistency = deref(r.Consistency); consistency {
	case "":
		consistency = "eventual"
	case "strong", "eventual":
	default:
		return "", "", nil, errs.Invalid("consistency", "must be \"strong\" or \"eventual\"")
	}
	if r.Window != nil {
		if r.History != nil || r.From != nil || r.To != nil {
			return "", "", nil, errs.Invalid("window", "goes without history, from and to")
		}
		starts, err := cal.LastDays("window", *r.Window, now)
		return id, consistency, &historyRange{g: windows.Day, starts: starts, union: *r.Window}, err
	}
	if r.History == nil {
		if r.From != nil || r.To != nil {
			return "", "", nil, errs.Invalid("from", "and to go with history")
		}
		return id, consistency, nil, nil
	}
	g, err := windows.Parse("history", *r.History)
	if err != nil {
		return "", "", nil, err
	}
	to := now
	if r.To != nil {
		if to, err = rfc3339.Parse("to", *r.To); err != nil {
			return "", "", nil, err
		}
	}
	from := cal.Step(g, cal.Start(g, to), 1-windows.DefaultSpan(g))
	if r.From != nil {
		if from, err = rfc3339.Parse("from", *r.From); err != nil {
			return "", "", nil, err
		}
	}
	starts, err := cal.Range(g, from, to)
	if err != nil {
		return "", "", nil, err
	}
	return id, consistency, &historyRange{g: g, starts: starts}, nil
}

// historyBuckets is how many buckets one token of the history budget
// pays for: the default spans (60 minutes, 24 hours, 30 days) cost one,
// the longest (windows.MaxBuckets) ten, the default burst.
const historyBuckets = 100

// GetCounter reads a counter: the roll-up's total (eventual), or the sum of
// its shards now (strong), with what its mode tells its reader
// (modes.go), and its history by minute, hour or day, or a distinct
// counter's window of days. Each read is paid from its budget first.
func (core *Core) GetCounter(ctx context.Context, caller Caller, body GetCounterRequest) (GetCounterResponse, error) {
	ctx = ledger.WithLabel(ctx, "read")
	id, consistency, h, err := body.validate(core.cfg.Calendar, core.now())
	if err != nil {
		return GetCounterResponse{}, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if h != nil && core.cfg.Windows == nil {
		return GetCounterResponse{}, errs.New(errs.FailedPrecondition, "history: the roll-up keeps no windows (WINDOWS=off)")
	}
	// An eventual read spends read, a strong one strong, history a token
	// of history for each historyBuckets it reads (its eventual read
	// included).
	if consistency == "strong" {
		tokens := core.strongTokens(id)
		if most := core.limiter.Burst(ratelimit.Strong, caller.budgetKeys()...); !caller.Admin && tokens > most {
			return GetCounterResponse{}, errs.Invalid("consistency", "a strong read of %q spends %d tokens of strong: this deployment's budget (RATE_LIMITS) allows at most %d at once", id, tokens, most)
		}
		if err := core.allow(ctx, caller, ratelimit.Strong, tokens); err != nil {
			return GetCounterResponse{}, err
		}
	}
	if h != nil {
		kind, _ := core.cfg.Kinds.Of(id)
		perBucket, err := modes[kind.Mode()].perBucket(kind, id, h)
		if err != nil {
			return GetCounterResponse{}, err
		}
		tokens := (len(h.starts)*perBucket + historyBuckets - 1) / historyBuckets
		if most := core.limiter.Burst(ratelimit.History, caller.budgetKeys()...); !caller.Admin && tokens > most || len(h.starts)*perBucket > windows.MaxBuckets {
			return GetCounterResponse{}, errs.Invalid("from", "and to span %d buckets of %d documents each (a distinct counter's: a sketch a shard): this deployment's history budget (RATE_LIMITS) allows at most %d documents at once, and no read more than %d",
				len(h.starts), perBucket, most*historyBuckets, windows.MaxBuckets)
		}
		if err := core.allow(ctx, caller, ratelimit.History, tokens); err != nil {
			return GetCounterResponse{}, err
		}
	} else if consistency != "strong" {
		if err := core.allow(ctx, caller, ratelimit.Read, 1); err != nil {
			return GetCounterResponse{}, err
		}
	}
	resp := GetCounterResponse{CounterID: id, Consistency: consistency}
	var c counter.Counter
	if consistency == "strong" {
		var at time.Time
		if c, resp.Count, at, err = core.counters.Strong(ctx, id); err != nil {
			return GetCounterResponse{}, err
		}
		resp.AsOf = rfc3339Time(at)
	} else {
		if c, err = core.counters.LiveOrNew(ctx, id); err != nil {
			return GetCounterResponse{}, err
		}
		resp.Count, resp.AsOf, resp.Reshard = c.Count, rfc3339Time(c.AsOf), reshardStatus(c.Reshard)
		if c.Version.IsZero() {
			resp.AsOf = rfc3339Time(core.now()) // of a kind, not used yet: 0 now
		}
	}
	resp.NumShards, resp.Unique = c.NumShards, c.Mode.Members()
	if err := modes[c.Mode].read(core, ctx, caller, c, &resp); err != nil {
		return GetCounterResponse{}, err
	}
	if h != nil {
		return modes[c.Mode].history(core, ctx, c, h, resp)
	}
	return resp, nil
}

// strongTokens is what a strong read of counter id spends: a token of
// strong pays for 3 reads, and a token more for every 3 reads its kind's
// counters make beyond the document and a SUM (counter.Kind.StrongReads).
func (core *Core) strongTokens(id string) int {
	kind, _ := core.cfg.Kinds.Of(id)
	return 1 + (kind.StrongReads()+2)/3
}

// byChoice is counts with each of choices, 0 when absent (none chosen
// yet); nil without choices.
func byChoice(choices []string, counts map[string]int64) map[string]int64 {
	if choices == nil {
		return nil
	}
	out := make(map[string]int64, len(choices))
	for _, choice := range choices {
		out[choice] = counts[choice]
	}
	return out
}

// requiredCounterID validates the counter_id every request but
// createCounter must send.
func requiredCounterID(id *string) (string, error) {
	if id == nil {
		return "", errs.Invalid("counter_id", "is required")
	}
	if err := counter.ValidateID(*id); err != nil {
		return "", err
	}
	return *id, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

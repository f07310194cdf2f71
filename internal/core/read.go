package core

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/windows"
	"github.com/shardcount/shardcount/internal/wire"
)

func reshardStatus(r counter.Reshard) *wire.ReshardStatus {
	if r.At.IsZero() {
		return nil
	}
	return &wire.ReshardStatus{From: r.From, To: r.To, At: rfc3339Time(r.At), Merging: r.Merging(),
		MergeUntil: rfc3339Time(r.MergeUntil), MergedAt: rfc3339Time(r.MergedAt)}
}

func rfc3339Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// validateRead checks a read on its own, at now.
func validateRead(r wire.GetCounterRequest, cal windows.Calendar, now time.Time) (id, consistency string, h *windows.History, err error) {
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
	h, err = cal.HistoryOf(r.History, r.From, r.To, r.Window, now)
	if err != nil {
		return "", "", nil, err
	}
	return id, consistency, h, nil
}

// historyBuckets is how many buckets one token of the history budget
// pays for: the default spans (60 minutes, 24 hours, 30 days) cost one,
// the longest (windows.MaxBuckets) ten, the default burst.
const historyBuckets = 100

// GetCounter reads a counter: the roll-up's total (eventual), or the sum of
// its shards now (strong), with what its mode tells its reader
// (modes.go), and its history by minute, hour or day, or a distinct
// counter's window of days. Each read is paid from its budget first.
func (core *Core) GetCounter(ctx context.Context, caller Caller, body wire.GetCounterRequest) (wire.GetCounterResponse, error) {
	ctx = ledger.WithLabel(ctx, "read")
	id, consistency, h, err := validateRead(body, core.cfg.Calendar, core.now())
	if err != nil {
		return wire.GetCounterResponse{}, err
	}
	logging.Annotate(ctx, "counter_id", id)
	if h != nil && core.cfg.Windows == nil {
		return wire.GetCounterResponse{}, errs.New(errs.FailedPrecondition, "history: the roll-up keeps no windows (WINDOWS=off)")
	}
	// An eventual read spends read, a strong one strong, history a token
	// of history for each historyBuckets it reads (its eventual read too).
	if consistency == "strong" {
		if err := core.spendAtOnce(ctx, caller, ratelimit.Strong, "consistency", core.strongTokens(id), "a strong read of %q", id); err != nil {
			return wire.GetCounterResponse{}, err
		}
	}
	if h != nil {
		kind, _ := core.cfg.Kinds.Of(id)
		perBucket, err := modes[kind.Mode()].perBucket(kind, id, h)
		if err != nil {
			return wire.GetCounterResponse{}, err
		}
		tokens := (len(h.Starts)*perBucket + historyBuckets - 1) / historyBuckets
		if most := core.limiter.Burst(ratelimit.History, caller.budgetKeys()...); !caller.Admin && tokens > most || len(h.Starts)*perBucket > windows.MaxBuckets {
			return wire.GetCounterResponse{}, errs.Invalid("from", "and to span %d buckets of %d documents each (a distinct counter's: a sketch a shard): this deployment's history budget (RATE_LIMITS) allows at most %d documents at once, and no read more than %d",
				len(h.Starts), perBucket, most*historyBuckets, windows.MaxBuckets)
		}
		if err := core.allow(ctx, caller, ratelimit.History, tokens); err != nil {
			return wire.GetCounterResponse{}, err
		}
	} else if consistency != "strong" {
		if err := core.allow(ctx, caller, ratelimit.Read, 1); err != nil {
			return wire.GetCounterResponse{}, err
		}
	}
	resp := wire.GetCounterResponse{CounterID: id, Consistency: consistency}
	var c counter.Counter
	if consistency == "strong" {
		var at time.Time
		if c, resp.Count, at, err = core.counters.Strong(ctx, id); err != nil {
			return wire.GetCounterResponse{}, err
		}
		resp.AsOf = rfc3339Time(at)
	} else {
		if c, err = core.counters.LiveOrNew(ctx, id); err != nil {
			return wire.GetCounterResponse{}, err
		}
		resp.Count, resp.AsOf, resp.Reshard = c.Count, rfc3339Time(c.AsOf), reshardStatus(c.Reshard)
		if c.Version.IsZero() {
			resp.AsOf = rfc3339Time(core.now()) // of a kind, not used yet: 0 now
		}
	}
	resp.NumShards, resp.Unique = c.NumShards, c.Mode.Members()
	if err := modes[c.Mode].read(core, ctx, caller, c, &resp); err != nil {
		return wire.GetCounterResponse{}, err
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

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

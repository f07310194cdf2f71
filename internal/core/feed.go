package core

import (
	"context"
	"slices"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/wire"
)

// feedReads is how many documents a token of the budget feed pays for.
const feedReads = 20

// CounterRead is one counter of getCounters: its row, or the error it
// alone had (Row names the counter still).
type CounterRead struct {
	Row wire.CounterRow
	Err error
}

// GetCounters reads a page of counters in one call, in the order asked:
// each as of FEED_CACHE ago at most (this instance's cache, the rest in
// one batched read), with the reader's membership and choice (a query of
// their member documents per 30 counters). A counter of a kind nobody used
// is 0, created by no read; one that does not exist, or was deleted, is
// its row's error alone. A token of feed pays for 20 documents it may
// read: a counter not fresh in the cache, one the reader may be a member
// of; fresh counters and readers of none cost none.
func (core *Core) GetCounters(ctx context.Context, caller Caller, body wire.GetCountersRequest) ([]CounterRead, error) {
	ctx = ledger.WithLabel(ctx, "feed")
	ids, err := counterIDsOf(body, core.cfg.Kinds)
	if err != nil {
		return nil, err
	}
	out := make([]CounterRead, len(ids))
	var valid []string
	for i, id := range ids {
		out[i].Row.CounterID = id
		if out[i].Err = counter.ValidateID(id); out[i].Err == nil && !slices.Contains(valid, id) {
			valid = append(valid, id)
		} else if len(id) > counter.MaxIDLength {
			out[i].Row.CounterID = errs.Prefix(id) // echoed as an error echoes what it names
		}
	}
	pay := func(reads int) error {
		return core.allowPaying(ctx, caller, ratelimit.Feed, (reads+feedReads-1)/feedReads, reads)
	}
	counters, counterErrs, err := core.counters.Fresh(ctx, valid, core.cfg.FeedCache, pay)
	if err != nil {
		return nil, err
	}
	read := map[string]int{} // of valid
	var members []string     // the counters of members, whose reader's state is read
	for j, id := range valid {
		read[id] = j
		if counterErrs[j] == nil && modes[counters[j].Mode].members && caller.User != "" {
			members = append(members, id)
		}
	}
	held := map[string]string{}
	if len(members) > 0 {
		if err := pay(len(members)); err != nil {
			return nil, err
		}
		if held, err = core.members.Holds(ctx, caller.User, members); err != nil {
			return nil, err
		}
	}
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		j := read[out[i].Row.CounterID]
		if out[i].Err = counterErrs[j]; out[i].Err != nil {
			continue
		}
		c, row := counters[j], &out[i].Row
		row.Count, row.AsOf = &c.Count, rfc3339Time(c.AsOf) // of a kind, not used yet: 0 as of the read
		modes[c.Mode].row(row, c, held, caller.User != "")
	}
	return out, nil
}

// counterIDsOf are the ids a request names: its counter_ids, or each of its
// kinds (declared ones) of each of its keys.
func counterIDsOf(r wire.GetCountersRequest, kinds counter.Kinds) ([]string, error) {
	switch {
	case r.CounterIDs != nil && (r.Keys != nil || r.Kinds != nil):
		return nil, errs.Invalid("counter_ids", "goes without keys and kinds: name the counters one way")
	case r.CounterIDs != nil:
		if len(r.CounterIDs) == 0 {
			return nil, errs.Invalid("counter_ids", "must hold 1 to %d counters", wire.MaxCountersPerRead)
		}
		return r.CounterIDs, nil
	case r.Keys == nil || r.Kinds == nil:
		return nil, errs.Invalid("counter_ids", "is required, or keys and kinds (every kind of every key)")
	case len(r.Keys) == 0 || len(r.Kinds) == 0 || len(r.Keys)*len(r.Kinds) > wire.MaxCountersPerRead:
		return nil, errs.Invalid("keys", "and kinds name %d × %d counters: 1 to %d in all", len(r.Keys), len(r.Kinds), wire.MaxCountersPerRead)
	}
	for i, k := range r.Kinds {
		if _, ok := kinds[k]; !ok {
			return nil, errs.Invalid("kinds", "[%d] %q is not a kind of COUNTER_KINDS", i, errs.Prefix(k))
		}
	}
	ids := make([]string, 0, len(r.Keys)*len(r.Kinds))
	for _, key := range r.Keys {
		if len(key) > counter.MaxIDLength { // too long for any id: its rows fail alike, at no 200 × its length
			key = key[:counter.MaxIDLength]
		}
		for _, k := range r.Kinds {
			ids = append(ids, k+":"+key)
		}
	}
	return ids, nil
}

// heldOf tells a row the reader's membership of counter c (held: the
// counters they are a member of, with their choice).
func heldOf(c counter.Counter, held map[string]string) (*bool, *string) {
	choice, member := held[c.ID]
	return &member, &choice
}

// rowOfMember tells a signed-in reader whether they are a member.
func rowOfMember(row *wire.CounterRow, c counter.Counter, held map[string]string, signedIn bool) {
	if signedIn {
		row.Member, _ = heldOf(c, held)
	}
}

// rowOfChoice tells each choice's count, and a signed-in reader their
// choice ("": none).
func rowOfChoice(row *wire.CounterRow, c counter.Counter, held map[string]string, signedIn bool) {
	row.Counts = byChoice(c.Choices, c.Counts)
	if signedIn {
		row.Member, row.Choice = heldOf(c, held)
	}
}

func rowOfPlain(*wire.CounterRow, counter.Counter, map[string]string, bool) {}

// rowOfEstimate says the count is an estimate.
func rowOfEstimate(row *wire.CounterRow, _ counter.Counter, _ map[string]string, _ bool) {
	row.Estimate = true
}

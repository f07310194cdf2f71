package core

import (
	"context"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/distinct"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/windows"
	"github.com/shardcount/shardcount/internal/wire"
)

// modeRules are what the core does differently for the counters of one
// mode (counter.Mode), in the manner of raft's step function per role: a
// new way of counting is one more entry of modes (docs/development.md).
type modeRules struct {
	// take checks op, sent with item by caller to counter c, and sets its
	// user, choice and key as the mode counts them.
	take func(core *Core, caller Caller, c counter.Counter, op *increment.Op, item wire.IncrementItem) error
	// answer adds what the mode tells of an increment's result r.
	answer func(resp *wire.IncrementCounterResponse, r increment.Result)
	// read adds what a read of counter c tells its reader.
	read func(core *Core, ctx context.Context, caller Caller, c counter.Counter, resp *wire.GetCounterResponse) error
	// perBucket is what history reads per bucket of counter id of kind
	// (known before the counter is read, to spend the budget first), and
	// history reads it.
	perBucket func(kind counter.Kind, id string, h *windows.History) (int, error)
	history   func(core *Core, ctx context.Context, c counter.Counter, h *windows.History, resp wire.GetCounterResponse) (wire.GetCounterResponse, error)
	// row adds what a page's row of counter c tells its reader (held: the
	// counters the reader is a member of, with their choice).
	row     func(row *wire.CounterRow, c counter.Counter, held map[string]string, signedIn bool)
	members bool // a member document per user counted (listMembers, a reader's state)
}

var modes = [...]modeRules{
	counter.Plain:    {take: addsDelta, answer: tellsNothing, read: tellsNothingMore, perBucket: aDocumentABucket, history: bucketHistory, row: rowOfPlain},
	counter.Unique:   {take: joinsOrLeaves, answer: tellsMember, read: readsMember, perBucket: aDocumentABucket, history: bucketHistory, row: rowOfMember, members: true},
	counter.JoinOnly: {take: joinsOnly, answer: tellsMember, read: readsMember, perBucket: aDocumentABucket, history: bucketHistory, row: rowOfMember, members: true},
	counter.Choice:   {take: chooses, answer: tellsChoice, read: readsChoice, perBucket: aDocumentABucket, history: bucketHistory, row: rowOfChoice, members: true},
	counter.Distinct: {take: addsOnce, answer: tellsNothing, read: tellsEstimate, perBucket: aSketchAShard, history: sketchHistory, row: rowOfEstimate},
}

// addsDelta takes a delta within the caller's role (mayAdd), of the caller.
func addsDelta(core *Core, caller Caller, c counter.Counter, op *increment.Op, item wire.IncrementItem) error {
	if err := noChoice(c, item); err != nil {
		return err
	}
	if item.Member != nil {
		return errs.Invalid("member", "goes with unique counters; %q counts increments, not members", c.ID)
	}
	return core.mayAdd(caller, c, op.Delta)
}

// joinsOrLeaves takes +1 or −1 of the caller, or of member for an admin.
func joinsOrLeaves(core *Core, caller Caller, c counter.Counter, op *increment.Op, item wire.IncrementItem) error {
	if err := noChoice(c, item); err != nil {
		return err
	}
	return seat(caller, c, op, item.Member)
}

// joinsOnly is joinsOrLeaves, but an end user never leaves.
func joinsOnly(core *Core, caller Caller, c counter.Counter, op *increment.Op, item wire.IncrementItem) error {
	if err := noChoice(c, item); err != nil {
		return err
	}
	if op.Delta == -1 && !caller.Admin {
		return errs.New(errs.PermissionDenied, "%q is of a join-only kind: a member does not leave (an admin may remove one)", c.ID)
	}
	return seat(caller, c, op, item.Member)
}

// chooses takes the caller's choice (or member's for an admin): one of the
// counter's choices, or "" (or a −1) to remove theirs.
func chooses(core *Core, caller Caller, c counter.Counter, op *increment.Op, item wire.IncrementItem) error {
	switch {
	case item.Choice == nil && op.Delta != -1:
		return errs.Invalid("choice", "is required on %q: one of %s, or \"\" to remove yours", c.ID, strings.Join(c.Choices, ", "))
	case item.Choice == nil:
		// a −1 removes the choice
	case item.Delta != nil || item.ActionType != nil:
		return errs.Invalid("choice", "and delta or action_type are exclusive: a choice sets yours, \"\" removes it")
	case *item.Choice != "" && !c.Offers(*item.Choice):
		return errs.Invalid("choice", "%q is not a choice of %q: one of %s, or \"\" to remove yours", *item.Choice, c.ID, strings.Join(c.Choices, ", "))
	default:
		if op.Choice, op.Delta = *item.Choice, 1; op.Choice == "" {
			op.Delta = -1
		}
	}
	return seat(caller, c, op, item.Member)
}

// seat checks an op that seats or unseats a member of counter c: +1 or −1
// of the caller, or of member for an admin.
func seat(caller Caller, c counter.Counter, op *increment.Op, member *string) error {
	if op.Delta != 1 && op.Delta != -1 {
		return errs.Invalid("delta", "must be 1 or -1 on unique counter %q: +1 adds you, -1 removes you", c.ID)
	}
	if member == nil {
		return counter.ValidateMemberID(caller.User)
	}
	op.User = *member
	if err := counter.ValidateUID("member", op.User); err != nil {
		return err
	}
	if op.Key != "" {
		// The admin's key, apart from the member's own: a key a client
		// sends cannot hold a NUL, so the member cannot take it first.
		op.Key = "\x00" + caller.User + "\x00" + op.Key
	}
	return nil
}

// addsOnce takes +1 of the caller, or of member for an admin, to a
// distinct counter. Its key is dropped: a member added again changes
// nothing, so a retry needs none, and no record is written.
func addsOnce(core *Core, caller Caller, c counter.Counter, op *increment.Op, item wire.IncrementItem) error {
	if err := noChoice(c, item); err != nil {
		return err
	}
	if op.Delta != 1 {
		return errs.Invalid("delta", "must be 1 on distinct counter %q: a member is added once, and never removed", c.ID)
	}
	if item.Member != nil {
		op.User = *item.Member
		if err := counter.ValidateUID("member", op.User); err != nil {
			return err
		}
	}
	op.Key = ""
	return counter.ValidateMemberID(op.User)
}

// noChoice refuses a choice sent to counter c, not a choice counter.
func noChoice(c counter.Counter, item wire.IncrementItem) error {
	if item.Choice != nil {
		return errs.Invalid("choice", "goes with counters of a choice kind; %q has no choices", c.ID)
	}
	return nil
}

func tellsNothing(*wire.IncrementCounterResponse, increment.Result) {}

// tellsMember answers whether the user is a member now, and whether the
// increment made it so.
func tellsMember(resp *wire.IncrementCounterResponse, r increment.Result) {
	resp.Member, resp.Changed = &r.Member, &r.Changed
}

// tellsChoice answers the member's choice now and before, too.
func tellsChoice(resp *wire.IncrementCounterResponse, r increment.Result) {
	tellsMember(resp, r)
	resp.Choice, resp.Previous = &r.Choice, &r.Previous
}

func tellsNothingMore(*Core, context.Context, Caller, counter.Counter, *wire.GetCounterResponse) error {
	return nil
}

// readsMember tells a signed-in reader whether they are a member.
func readsMember(core *Core, ctx context.Context, caller Caller, c counter.Counter, resp *wire.GetCounterResponse) error {
	var err error
	resp.Member, _, err = core.readerOf(ctx, caller, c.ID)
	return err
}

// readsChoice tells each choice's count, and a signed-in reader their
// choice ("": none).
func readsChoice(core *Core, ctx context.Context, caller Caller, c counter.Counter, resp *wire.GetCounterResponse) error {
	var err error
	resp.Counts = byChoice(c.Choices, c.Counts)
	resp.Member, resp.Choice, err = core.readerOf(ctx, caller, c.ID)
	return err
}

// tellsEstimate says the count is an estimate, and how close.
func tellsEstimate(_ *Core, _ context.Context, _ Caller, _ counter.Counter, resp *wire.GetCounterResponse) error {
	resp.Estimate, resp.StandardError = true, distinct.StandardError
	return nil
}

// readerOf reads whether a signed-in caller is a member of counter id,
// and their choice; nil for a caller with no uid.
func (core *Core) readerOf(ctx context.Context, caller Caller, id string) (*bool, *string, error) {
	if caller.User == "" {
		return nil, nil, nil
	}
	member, choice, err := core.members.IsMember(ctx, id, caller.User)
	if err != nil {
		return nil, nil, err
	}
	return &member, &choice, nil
}

// aDocumentABucket: a bucket of history is one document, of any
// granularity; a window of days is a distinct counter's.
func aDocumentABucket(_ counter.Kind, _ string, h *windows.History) (int, error) {
	if h.Union != "" {
		return 0, errs.Invalid("window", "goes with counters of a distinct kind; history sums any other's buckets")
	}
	return 1, nil
}

// aSketchAShard: a distinct counter's bucket is a sketch a shard, of its
// hours and days only.
func aSketchAShard(kind counter.Kind, id string, h *windows.History) (int, error) {
	if h.G == windows.Minute {
		return 0, errs.Invalid("history", "of a distinct counter is by hour or day: its minutes keep no sketches")
	}
	return kind.Counter(id).NumShards, nil
}

// bucketHistory answers counter c's buckets, each the change of its count
// (and of a choice counter's counts).
func bucketHistory(core *Core, ctx context.Context, c counter.Counter, h *windows.History, resp wire.GetCounterResponse) (wire.GetCounterResponse, error) {
	if h.Union != "" {
		return wire.GetCounterResponse{}, errs.Invalid("window", "goes with counters of a distinct kind; %q is not one", c.ID)
	}
	tallies, err := core.windows.History(ctx, c.ID, h.G, h.Starts)
	return withHistory(c, h, resp, tallies, err)
}

// sketchHistory answers a distinct counter's history from the shards'
// sketches of its buckets (each bucket's distinct members), or its window
// (the distinct members of its days).
func sketchHistory(core *Core, ctx context.Context, c counter.Counter, h *windows.History, resp wire.GetCounterResponse) (wire.GetCounterResponse, error) {
	tallies, union, err := core.windows.DistinctHistory(ctx, c.ID, h.G, h.Starts)
	if err == nil && h.Union != "" {
		resp.Count, resp.Window, resp.From = union, h.Union, h.Starts[0].Format(time.RFC3339)
		return resp, nil
	}
	return withHistory(c, h, resp, tallies, err)
}

// withHistory is resp with a point a bucket of h.
func withHistory(c counter.Counter, h *windows.History, resp wire.GetCounterResponse, tallies []windows.Tally, err error) (wire.GetCounterResponse, error) {
	if err != nil {
		return wire.GetCounterResponse{}, err
	}
	resp.History = make([]wire.HistoryPoint, len(tallies))
	for i, t := range tallies {
		resp.History[i] = wire.HistoryPoint{Start: h.Starts[i].Format(time.RFC3339), Count: t.Count, Counts: byChoice(c.Choices, t.Counts)}
	}
	return resp, nil
}

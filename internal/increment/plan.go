package increment

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
)

// Plan is what one commit of the pending ops writes, each write with the
// precondition the driver gives it, and what each op answers if it lands.
type Plan struct {
	// Net is added to the batch's shard when WriteShard, and each of
	// Counts to the shard's count of that choice (a choice counter's).
	Net        int64
	Counts     map[string]int64
	WriteShard bool
	// Joins are the members whose document the commit creates (on the
	// condition that it does not exist, or, over an orphan's, that it is
	// still the version read); Leaves those whose document it deletes,
	// and Switches those whose choice it changes, on the condition of the
	// version read. Orphans are member documents of a counter that does
	// not exist (its document deleted by hand) that the commit deletes,
	// counting nothing: they count for no counter.
	Joins    []Seat
	Leaves   []Seat
	Switches []Seat
	Orphans  []Seat
	// Adds are the members a distinct counter's commit adds to the
	// shard's sketches (each written, when they change it, on the
	// condition of the version it was read at).
	Adds []string
	// Records are the idempotency keys' records the commit creates, or
	// replaces (an expired one, on the condition of its version).
	Records []KeyWrite
	// Creates: the commit also creates the counter (its first use).
	Creates bool

	outcome map[int]Result
}

// Seat is a member document a commit writes: its user, their choice (of
// a choice counter) and the version it was read at (of one that exists).
type Seat struct {
	User, Choice string
	Version      time.Time
}

// KeyWrite is a keyed op's record written by a commit.
type KeyWrite struct {
	Op        int
	User, Key string
	Record    Record
	// Replace is the version of the expired record it replaces; zero: the
	// record is created.
	Replace time.Time
}

// Empty reports whether the plan writes nothing: every pending op answers
// without a commit.
func (p Plan) Empty() bool {
	return !p.WriteShard && len(p.Joins) == 0 && len(p.Leaves) == 0 && len(p.Switches) == 0 && len(p.Orphans) == 0 && len(p.Records) == 0
}

// Plan returns the commit of the pending ops, at now, over the members of
// a unique counter as read (members has every user of Users):
//
//   - a plain counter's deltas add up on its shard (RefuseBeyond has
//     refused those past the bound);
//   - a unique counter's ops add (+1) or remove (−1) their user, in
//     arrival order; the commit creates or deletes each member document
//     whose state changes, and adds ±1 to the shard for each, so the count
//     is always the number of members; an op that changes nothing writes
//     nothing;
//   - a choice counter's ops set their user's choice, or remove it, in
//     arrival order; the commit creates, updates or deletes each member
//     document whose choice changes, and moves the shard's count of each
//     choice with it, so each choice's count is always the number of
//     members holding it;
//   - a distinct counter's ops add their user to the shard's sketch, which
//     a user added before leaves as it was (the handlers send no keys);
//   - each key's record is written with its op's outcome, so a retry
//     replays it;
//   - the first use of a counter of a kind creates it, unless the plan
//     changes nothing and answers no keyed op as a change: an unlike of a
//     counter nobody used creates nothing, not even its key's record (a
//     retry finds the same nothing). A like and an unlike of one user in
//     one batch change nothing in total, but each answers changed: their
//     records, and the counter, are written.
func (b *Batch) Plan(members map[string]Membership, now time.Time) Plan {
	p := Plan{outcome: map[int]Result{}}
	switch b.Counter.Mode {
	case counter.Distinct:
		p.Adds = b.Users()
		for _, i := range b.pending {
			p.outcome[i] = Result{Delta: 1, Shard: b.Shard}
		}
		p.WriteShard = true
	case counter.Unique, counter.JoinOnly, counter.Choice:
		p.playMembers(b, members)
	default:
		for _, i := range b.pending {
			p.Net += b.ops[i].Delta
			p.outcome[i] = Result{Delta: b.ops[i].Delta, Shard: b.Shard}
		}
		p.WriteShard = true
	}
	if b.Creates() && !p.WriteShard && len(p.Joins) == 0 && !p.changesAKeyed(b) {
		// Nothing to count (an unlike of a counter nobody used, or the
		// orphans of one deleted by hand): the counter is not created, nor
		// a key's record.
		return p
	}
	expire := now.Add(KeyTTL)
	for _, i := range b.pending {
		op := b.ops[i]
		if op.Key == "" {
			continue
		}
		o := p.outcome[i]
		p.Records = append(p.Records, KeyWrite{Op: i, User: op.User, Key: op.Key, Replace: b.replace[i],
			Record: Record{Delta: op.Delta, Shard: o.Shard, Member: o.Member, Changed: o.Changed,
				Choice: o.Choice, Previous: o.Previous, ExpireAt: expire}})
	}
	p.Creates = b.Creates()
	return p
}

// hold is a user's state on a unique counter: a member or not, and, on a
// choice counter, their choice (a member's is never "").
type hold struct {
	in     bool
	choice string
}

// wanted is the state op asks for: +1 joins (with its choice, on a
// choice counter, where only a choice's op is +1), −1 leaves.
func wanted(op Op) hold { return hold{in: op.Delta > 0, choice: op.Choice} }

// playMembers plays a unique counter's pending ops in arrival order over
// the members read, and sets each op's outcome and the plan's changes.
func (p *Plan) playMembers(b *Batch, read map[string]Membership) {
	// A member document read where the counter is absent, read again (not
	// created meanwhile: Outdated), is an orphan: its user counts for
	// nothing here, and is out until an op brings them in.
	orphans := b.Creates() && b.absent
	state := map[string]hold{}
	for _, u := range b.Users() {
		state[u] = hold{}
		if !orphans {
			state[u] = hold{in: read[u].Member, choice: read[u].Choice}
		}
	}
	var changed []int
	// The ops of one commit are concurrent: any serial order is theirs to
	// answer by. An erasure goes last, so that a like or a switch of the
	// user landing beside it cannot leave them a member (their document
	// from before, kept, would escape the erasure's pass of what came
	// later).
	order := slices.Clone(b.pending)
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(boolInt(b.ops[i].Erase), boolInt(b.ops[j].Erase)) })
	for _, i := range order {
		op := b.ops[i]
		r := Result{Delta: op.Delta, Shard: -1, Previous: state[op.User].choice}
		if want := wanted(op); want != state[op.User] {
			state[op.User] = want
			r.Changed = true
			changed = append(changed, i)
		}
		r.Member, r.Choice = state[op.User].in, state[op.User].choice
		p.outcome[i] = r
	}
	for _, u := range slices.Sorted(maps.Keys(state)) {
		m, now := read[u], state[u]
		seat := Seat{User: u, Choice: now.choice, Version: m.Version}
		if orphans && m.Member {
			// In: a join over the orphan's document (Version set); out: the
			// orphan deleted. Either way nothing of it is counted.
			m = Membership{}
			if !now.in {
				p.Orphans = append(p.Orphans, seat)
			}
		}
		switch {
		case now.in && !m.Member:
			p.Joins = append(p.Joins, seat)
			p.Net++
		case !now.in && m.Member:
			p.Leaves = append(p.Leaves, seat)
			p.Net--
		case now.in && now.choice != m.Choice:
			p.Switches = append(p.Switches, seat)
		}
		if now.choice != m.Choice {
			p.Counts = addChoice(p.Counts, m.Choice, -1)
			p.Counts = addChoice(p.Counts, now.choice, 1)
		}
	}
	p.WriteShard = p.Net != 0 || len(p.Counts) > 0
	if p.WriteShard {
		for _, i := range changed {
			r := p.outcome[i]
			r.Shard = b.Shard
			p.outcome[i] = r
		}
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// addChoice adds n to counts[choice] (none for no choice), dropping a
// count that comes to nothing.
func addChoice(counts map[string]int64, choice string, n int64) map[string]int64 {
	if choice == "" {
		return counts
	}
	if counts == nil {
		counts = map[string]int64{}
	}
	if counts[choice] += n; counts[choice] == 0 {
		delete(counts, choice)
	}
	return counts
}

// changesAKeyed reports whether a pending op with a key changes
// something (its record must be written, for a retry to replay it).
func (p Plan) changesAKeyed(b *Batch) bool {
	return slices.ContainsFunc(b.pending, func(i int) bool { return b.ops[i].Key != "" && p.outcome[i].Changed })
}

// Committed settles the pending ops with the outcomes of p, whose commit
// landed (or, for an empty plan, was not needed).
func (b *Batch) Committed(p Plan) {
	for _, i := range b.pending {
		b.results[i] = p.outcome[i]
	}
	b.pending = nil
}

// Raced settles what it can after a commit of the pending ops lost a race
// (a key's record, or a member, changed since it was read, or the counter
// was created), from the records of the keyed ops read again (by op; nil
// or absent: no record). A live record answers its op (a replay, or a
// conflict with another delta), an expired one is to be replaced, and the
// rest stay pending: the next plan reads the members again. It reports
// whether ops are left to commit.
func (b *Batch) Raced(records map[int]*Record, now time.Time) bool {
	settled := map[int]bool{}
	for _, i := range b.Keyed() {
		prev := records[i]
		switch {
		case prev == nil:
			delete(b.replace, i) // expired and deleted in between: create it
		case prev.ExpireAt.Before(now):
			// Firestore's TTL deletes within a day of expiry; until then an
			// expired key is treated as new, replacing the exact version read.
			b.replace[i] = prev.Version
		default:
			settled[i] = true
			b.stored[i] = *prev
			b.results[i] = replay(b.Counter, *prev, b.ops[i])
		}
	}
	b.pending = slices.DeleteFunc(b.pending, func(i int) bool { return settled[i] })
	return len(b.pending) > 0
}

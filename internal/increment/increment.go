// Package increment holds the rules of one shared commit of increments
// and likes, free of I/O, goroutines and clocks: which ops share an
// earlier op's key, which would take a counter past its bound, what a
// unique counter's ops do to its members, what the commit writes and what
// each op answers, how a lost race is settled from the key records read
// again, and how a group of ops that keeps losing is split.
//
// A Batch is driven from outside (internal/store/incrementstore), in the
// manner of etcd's raft: the driver reads what the next commit depends on
// (the members of Users, the counter's value), asks for a Plan, commits
// it with the preconditions it names, and reports the outcome (Committed,
// Raced, Fail). Each rule has a table test beside it.
package increment

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// Op is one increment of a shared commit.
type Op struct {
	Delta int64
	// User and Key scope an idempotency key: the same key from two users
	// is two keys. An empty Key applies the delta without a record. On a
	// unique counter, User is the member the op adds (+1) or removes (−1).
	User, Key string
	// Counter is the counter the op was authorized on, as read; it may be
	// used until Fresh (SHARD_COUNT_CACHE after the read began).
	Counter counter.Counter
	Fresh   time.Time
	// Choice, on a choice counter: the choice the op sets for User, in
	// place of any other ("": removes it; Delta is then −1, else +1).
	Choice string
	// Erase is an erasure's −1 (eraseMember): it plays after every other
	// op of its commit, so whatever of the user's own lands beside it,
	// the user leaves.
	Erase bool
}

// Result is the outcome of one Op.
type Result struct {
	Delta int64
	// Shard is the shard written; -1 when none was (a unique counter's op
	// that changed nothing).
	Shard int
	// Replayed is true when the key had been used: nothing was applied
	// and the first outcome is returned.
	Replayed bool
	// Member and Changed, on a unique counter: whether the user is a
	// member after the op, and whether the op made it so.
	Member, Changed bool
	// Choice and Previous, on a choice counter: the user's choice after
	// the op, and before it ("": none).
	Choice, Previous string
	Err              error
	// Reads is the op's share of what its commits read (documents and
	// aggregations): its request books them where its budget paid.
	Reads int
}

// Record is the stored outcome of a keyed op: its idempotency key's
// record, live until ExpireAt. Version is the stored record's.
type Record struct {
	Delta            int64
	Shard            int
	Member, Changed  bool
	Choice, Previous string
	ExpireAt         time.Time
	Version          time.Time
}

// MaxBatch is the most ops one shared commit's batch holds: a request's
// list of increments (wire.MaxIncrementsPerRequest), each split in halves
// while it keeps losing races (SplitByUser).
const MaxBatch = 500

// KeyTTL is how long an idempotency key's record lives.
const KeyTTL = 24 * time.Hour

// Membership is a user's member document as read before a commit.
type Membership struct {
	Member  bool
	Choice  string    // of a choice counter's member
	Version time.Time // of the member document, when Member
}

// Batch is the state of one shared commit of ops to one counter: the ops
// still to commit, in groups committed one after the other (one at first;
// a unique counter's group that keeps losing races is split in two by
// user), and each op's result.
type Batch struct {
	// Counter is the counter committed to; Shard is the shard written.
	Counter counter.Counter
	Shard   int

	ops     []Op
	results []Result
	// dupOf[i] >= 0 is the earlier op with the same key, whose outcome op
	// i shares.
	dupOf []int
	// groups are the groups still to commit; pending is the one under way.
	groups  [][]int
	pending []int
	// replace holds the version of an expired record a commit overwrites;
	// stored, the live record that answered an op (a replay or a
	// conflict), which also answers the ops that repeat its key.
	replace map[int]time.Time
	stored  map[int]Record
	// absent: the counter was read again and is still absent.
	absent bool
}

// New returns the batch of ops to counter c, written to shard. An op
// authorized on another incarnation of the counter (deleted and created
// again since, by someone else or otherwise) is refused, to be retried.
func New(c counter.Counter, shard int, ops []Op) *Batch {
	b := &Batch{Counter: c, Shard: shard, ops: ops, results: make([]Result, len(ops)), dupOf: make([]int, len(ops)),
		replace: map[int]time.Time{}, stored: map[int]Record{}}
	first := map[[2]string]int{}
	var group []int
	for i, op := range ops {
		b.dupOf[i] = -1
		if !SameIncarnation(op.Counter, c) {
			b.results[i].Err = errs.Retryable(nil, time.Second, "counter %q changed while this increment waited; retry", c.ID)
			continue
		}
		if op.Key != "" {
			k := [2]string{op.User, op.Key}
			if j, ok := first[k]; ok {
				b.dupOf[i] = j
				continue
			}
			first[k] = i
		}
		group = append(group, i)
	}
	if len(group) > 0 {
		b.groups = [][]int{group}
	}
	return b
}

// SameIncarnation reports whether a counter an op was authorized on is the
// one a commit writes: the same settings a caller's rights depend on, and
// the same creation (one not created yet is the one its first use creates).
func SameIncarnation(op, c counter.Counter) bool {
	if op.ID == "" {
		return true // not read by its caller (tests, tools): the batch's
	}
	created := !op.Version.IsZero() && !c.Version.IsZero()
	return op.CountsAs(c) && op.Owner == c.Owner && (!created || op.CreatedAt.Equal(c.CreatedAt))
}

// Next starts the next group of ops, and reports whether there is one.
func (b *Batch) Next() bool {
	if len(b.groups) == 0 {
		b.pending = nil
		return false
	}
	b.pending, b.groups = b.groups[0], b.groups[1:]
	return true
}

// Ops are the batch's ops.
func (b *Batch) Ops() []Op { return b.ops }

// Pending are the ops of the group under way not settled yet.
func (b *Batch) Pending() []int { return b.pending }

// Creates reports whether a commit now creates the counter: it did not
// exist when read (its first use).
func (b *Batch) Creates() bool { return b.Counter.Version.IsZero() }

// Outdated reports whether the members read for a first use show that
// the counter was created since it was read: one is a member already. The
// commit then goes the way of a lost race (the counter and the keys'
// records read again), as its plan may write nothing and answer a keyed
// op from the members alone, when its key's record, written with the
// counter, holds another outcome.
func (b *Batch) Outdated(members map[string]Membership) bool {
	return b.Creates() && !b.absent && slices.ContainsFunc(slices.Collect(maps.Values(members)), func(m Membership) bool { return m.Member })
}

// StillAbsent records that the counter, read again after a lost race, is
// still absent: its members (a document deleted by hand, its members
// left) no longer make the batch Outdated, and its commit creates it.
func (b *Batch) StillAbsent() { b.absent = true }

// Users are the users of the pending ops, in order of appearance: the
// members a unique counter's commit depends on.
func (b *Batch) Users() []string {
	var out []string
	for _, i := range b.pending {
		if u := b.ops[i].User; !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// Keyed are the pending ops with a key: their records are read again
// after a lost race.
func (b *Batch) Keyed() []int {
	return slices.DeleteFunc(slices.Clone(b.pending), func(i int) bool { return b.ops[i].Key == "" })
}

// Fail answers every pending op with err.
func (b *Batch) Fail(err error) {
	for _, i := range b.pending {
		b.results[i].Err = err
	}
	b.pending = nil
}

// RefuseBeyond refuses, each alone (OUT_OF_RANGE), the pending ops of a
// plain counter that would take it past ±counter.MaxCount from value, in
// arrival order.
func (b *Batch) RefuseBeyond(value int64) {
	running := value
	b.pending = slices.DeleteFunc(b.pending, func(i int) bool {
		next, ok := counter.Add(running, b.ops[i].Delta)
		if ok && counter.InBound(next) {
			running = next
			return false
		}
		b.results[i].Err = &errs.Error{Code: errs.OutOfRange, Field: "delta",
			Message: fmt.Sprintf("delta %d would take counter %q past ±%d, the largest value a counter holds (it holds about %d)",
				b.ops[i].Delta, b.Counter.ID, int64(counter.MaxCount), running)}
		return true
	})
}

// Results returns one result per op, once no group is left: an op whose
// key appeared earlier in the batch has that op's outcome, as a replay,
// or, when a stored record answered that op, the record's (an op of
// another delta than the first may be the record's own).
func (b *Batch) Results() []Result {
	for i, j := range b.dupOf {
		if j < 0 {
			continue
		}
		if rec, ok := b.stored[j]; ok {
			b.results[i] = replay(b.Counter, rec, b.ops[i])
			continue
		}
		switch first := b.results[j]; {
		case first.Err != nil:
			b.results[i].Err = first.Err
		case first.Delta != b.ops[i].Delta || b.ops[j].Choice != b.ops[i].Choice:
			b.results[i].Err = keyConflict(b.Counter, b.ops[j].Delta, b.ops[j].Choice)
		default:
			first.Replayed = true
			b.results[i] = first
		}
	}
	return b.results
}

// replay is the answer a stored record gives op: its outcome again, or a
// conflict when the record holds another delta or choice. The record's
// choice is the one it set, so a removal's ("") is its Choice too.
func replay(c counter.Counter, rec Record, op Op) Result {
	if rec.Delta != op.Delta || rec.Choice != op.Choice {
		return Result{Err: keyConflict(c, rec.Delta, rec.Choice)}
	}
	return Result{Delta: rec.Delta, Shard: rec.Shard, Replayed: true, Member: rec.Member, Changed: rec.Changed,
		Choice: rec.Choice, Previous: rec.Previous}
}

// keyConflict refuses a key used before on counter c with another delta,
// or another choice.
func keyConflict(c counter.Counter, delta int64, choice string) error {
	return &errs.Error{Code: errs.AlreadyExists, Field: "idempotency_key",
		Message: fmt.Sprintf("Idempotency-Key was already used on counter %q with %s", c.ID, c.Mode.Change(delta, choice))}
}

// SplitByUser splits a unique counter's pending ops into two groups by
// user (alternately, in order of appearance), each user's ops in one
// group in their order, committed one after the other, so one user
// toggling a like from several devices at once fails only their own ops.
// It reports false, and changes nothing, when there is one user (or the
// counter is not unique: only keys race there, and Raced settles them).
func (b *Batch) SplitByUser() bool {
	users := b.Users()
	if !b.Counter.Mode.Members() || len(users) < 2 {
		return false
	}
	var halves [2][]int
	for _, i := range b.pending {
		h := slices.Index(users, b.ops[i].User) % 2
		halves[h] = append(halves[h], i)
	}
	b.groups = append([][]int{halves[0], halves[1]}, b.groups...)
	b.pending = nil
	return true
}

// NearBound reports whether a plain counter's value v is within
// counter.CheckedZone of its bound: there, every commit sums the shards
// first, on the condition of the bound's guard (incrementstore).
func NearBound(v int64) bool {
	const edge = counter.MaxCount - counter.CheckedZone
	return v > edge || v < -edge
}

package counter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// Mode is how a counter counts. It is decided once, from its kind
// (COUNTER_KINDS) for a counter its first use creates, or from its
// document (and its kind's join_only) when it is read; every layer that
// counts differently per mode switches on it in one place
// (docs/development.md, "A new way of counting").
type Mode uint8

const (
	// Plain counters add every increment's delta (views, stock left).
	Plain Mode = iota
	// Unique counters count users, each at most once, each a member
	// document written in the commit that counts it (likes).
	Unique
	// JoinOnly counters are unique counters whose end users join and never
	// leave (viewers who cannot un-view); admins may still remove one.
	JoinOnly
	// Choice counters count the users holding one of the counter's choices,
	// and each choice's, each user at most one (reactions, polls).
	Choice
	// Distinct counters estimate their distinct users from a sketch a shard
	// (internal/distinct): no member documents, and none ever leaves.
	Distinct
)

// modes are the facts of each mode, declared once.
var modes = [...]struct {
	name, counting string
	members        bool
}{
	Plain:    {"plain", "plain (every increment)", false},
	Unique:   {"unique", "unique (each user once)", true},
	JoinOnly: {"join_only", "unique, join-only (each user once; end users never leave)", true},
	Choice:   {"choice", "choices (each user at most one of %s)", true},
	Distinct: {"distinct", "distinct (each user once, approximately)", false},
}

// String is the mode's name.
func (m Mode) String() string { return modes[m].name }

// Members reports whether counters of the mode keep a member document per
// user counted (unique, join-only and choice counters: the documents'
// "unique: true"); their count is their number of members.
func (m Mode) Members() bool { return modes[m].members }

// Counting describes how counters of mode m count, with choices (of a
// choice counter), in the terms that make two declarations of one kind
// count differently: a deploy that changes it changes what existing
// counters mean, or who may leave them.
func (m Mode) Counting(choices []string) string {
	return strings.Replace(modes[m].counting, "%s", strings.Join(choices, ", "), 1)
}

// ModeOf is the mode a counter document's fields say (unique, choices,
// distinct), refined by its kind's join_only.
func ModeOf(unique bool, choices []string, distinct, joinOnly bool) Mode {
	switch {
	case distinct:
		return Distinct
	case choices != nil:
		return Choice
	case unique && joinOnly:
		return JoinOnly
	case unique:
		return Unique
	}
	return Plain
}

// Reshards says whether counter id of mode m may change its shard count
// (by reshardCounter or automatic sharding): a distinct counter's shards
// hold sketches, which a merge of sums would lose, and a strong read's
// price counts on its kind's shards.
func (m Mode) Reshards(id string) error {
	if m == Distinct {
		return errs.Invalid("counter_id", "%q is a distinct counter: it keeps its kind's num_shards", id)
	}
	return nil
}

// Resets says whether a reset may set the value of counter id of mode m:
// not a counter of users (its value is its number of members) nor of
// distinct users (an estimate of its members).
func (m Mode) Resets(id string) error {
	switch m {
	case Plain:
		return nil
	case Distinct:
		return errs.Invalid("counter_id", "%q is a distinct counter: its value is an estimate of its members, which a reset cannot change", id)
	}
	return errs.Invalid("counter_id", "%q is a unique counter: its value is its number of members, which a reset cannot change", id)
}

// Change names what an increment of a counter of mode m did, for a
// message: its choice on a choice counter ("" removed it), else its delta.
func (m Mode) Change(delta int64, choice string) string {
	if m == Choice {
		return fmt.Sprintf("choice %q", choice)
	}
	return fmt.Sprintf("delta %d", delta)
}

// Estimates reports whether counters of mode m count by estimate
// (distinct counters): their count, and their hour and day buckets', are
// estimates of their sketches, which the roll-up sets rather than adds to
// (a change of an estimate counts nobody in a window).
func (m Mode) Estimates() bool { return m == Distinct }

// RanksIn says whether counters of kind, of mode m, rank in window (of
// topCounters): a distinct counter ranks by the estimate of its hours and
// days (windows.Sketched) and of all time. Minutes keep no sketches, so
// neither a minute nor a rolling window of minutes (last_hour, last_day,
// rising) can tell its users: their union is no sum of buckets.
func (m Mode) RanksIn(kind, window string) error {
	if m == Distinct && window != "all" && !slices.Contains(windows.Sketched, windows.Granularity(window)) {
		return errs.Invalid("window", "kind %q is distinct: its counters rank by the estimate of their users in an hour, a day or all time (window hour, day or all); minutes keep no sketches, and a rolling window's users are no sum of buckets", kind)
	}
	return nil
}

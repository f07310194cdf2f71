package sim

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// The serial-order search (Wing–Gong) the per-user checkers share: of a
// user's likes and unlikes (checkMembers), and of their reactions
// (checkChoices).

// step is one operation of a serial-order search: taken at an instant of
// [start, end] (an optional one, whose outcome is unknown, perhaps never),
// it moves the state from in to next's, and says whether it answered
// what it would there.
type step struct {
	start, end time.Time
	optional   bool
	next       func(in int) (int, bool)
}

// serial searches for a serial order of steps, each taken at an instant
// within its window (an optional one perhaps never), that gives every one
// its answer, starting from state 0 (the Wing–Gong search, with the states
// it has been in remembered). judged is false when the search gave up:
// past searchBudget states.
func serial(steps []step) (ok, judged bool) {
	slices.SortStableFunc(steps, func(a, b step) int { return a.start.Compare(b.start) })
	n := len(steps)
	done := make([]bool, n)
	bits := make([]byte, (n+7)/8+4)
	seen := map[string]bool{}
	var search func(left, in int) bool
	search = func(left, in int) bool {
		if left == 0 {
			return true
		}
		if len(seen) > searchBudget {
			return false
		}
		clear(bits)
		for i, d := range done {
			if d {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		binary.LittleEndian.PutUint32(bits[(n+7)/8:], uint32(in))
		key := string(bits)
		if seen[key] {
			return false
		}
		seen[key] = true
		// The next one taken starts before every other required one ends.
		first := time.Time{}
		for i, o := range steps {
			if !done[i] && !o.optional && (first.IsZero() || o.end.Before(first)) {
				first = o.end
			}
		}
		for i, o := range steps {
			if done[i] || !first.IsZero() && o.start.After(first) {
				continue
			}
			done[i] = true
			if o.optional && search(left-1, in) { // never taken
				return true
			}
			if next, ok := o.next(in); ok && search(left-1, next) {
				return true
			}
			done[i] = false
		}
		return false
	}
	ok = search(n, 0)
	return ok, ok || len(seen) <= searchBudget
}

// searchBudget bounds the states one search visits.
const searchBudget = 200_000

// lop is one operation of a linearizability check of a user's
// membership: a like or unlike (join), or a read of the membership.
type lop struct {
	start, end      time.Time
	join, read      bool
	member, changed bool // what it answered (a read: what it saw)
	optional        bool // its outcome is unknown: taken or not
	what            string
}

func (l *lop) String(w *world) string {
	verb := "unlike"
	switch {
	case l.read:
		verb = "read"
	case l.join:
		verb = "like"
	}
	answer := fmt.Sprintf("member=%v changed=%v", l.member, l.changed)
	if l.optional {
		answer = "unknown"
	}
	return fmt.Sprintf("%s [%s, %s] %s (%s)", verb, w.rel(l.start), w.rel(l.end), answer, l.what)
}

// linearizable searches for a serial order of a user's likes, unlikes
// and reads of their membership (serial), starting from no membership
// (state 0; a member: 1). It sorts ops by their start, as the search
// takes them.
func linearizable(ops []*lop) (ok, judged bool) {
	slices.SortStableFunc(ops, func(a, b *lop) int { return a.start.Compare(b.start) })
	steps := make([]step, len(ops))
	for i, o := range ops {
		steps[i] = step{start: o.start, end: o.end, optional: o.optional, next: func(in int) (int, bool) {
			member := in == 1
			if o.read {
				return in, member == o.member
			}
			next := 0
			if o.join {
				next = 1
			}
			return next, o.optional || (member != o.join) == o.changed && o.join == o.member
		}}
	}
	return serial(steps)
}

// cop is one step of a user's serial order on a choice counter: a tap
// (its keyed attempts, one request) asking for want and answering prev,
// got and changed, or a read seeing want.
type cop struct {
	start, end time.Time
	read       bool
	want       string
	prev, got  string
	changed    bool
	optional   bool // its outcome is unknown: taken or not
	what       string
}

func (c *cop) String(w *world) string {
	answer := fmt.Sprintf("previous %q choice %q changed %v", c.prev, c.got, c.changed)
	switch {
	case c.read:
		answer = fmt.Sprintf("saw %q", c.want)
	case c.optional:
		answer = "unknown"
	}
	return fmt.Sprintf("%q [%s, %s] %s (%s)", c.want, w.rel(c.start), w.rel(c.end), answer, c.what)
}

// serialChoices searches for a serial order of a user's steps (serial),
// from no choice.
func serialChoices(cs []*cop) (ok, judged bool) {
	slices.SortStableFunc(cs, func(a, b *cop) int { return a.start.Compare(b.start) })
	states := map[string]int{"": 0}
	state := func(c string) int {
		if _, ok := states[c]; !ok {
			states[c] = len(states)
		}
		return states[c]
	}
	steps := make([]step, len(cs))
	for i, c := range cs {
		want, prev, got := state(c.want), state(c.prev), state(c.got)
		steps[i] = step{start: c.start, end: c.end, optional: c.optional, next: func(in int) (int, bool) {
			if c.read {
				return in, in == want
			}
			return want, c.optional || in == prev && got == want && c.changed == (in != want)
		}}
	}
	return serial(steps)
}

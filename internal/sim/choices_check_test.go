package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/windows"
)

// The invariants of choice counters: each user holds at most one choice
// (their member document's), each choice's count is the number of users
// holding it, and every answer fits one serial order of each user's taps.

// choiceStats counts what checkChoices judged, and how: every user of a
// choice counter is judged by the serial-order search (unless past its
// budget: undecided); balanced of them by the balance of their answers
// too, last by their last answer too; unbalanced could not be judged by
// the balance, an op of theirs of unknown outcome.
type choiceStats struct {
	users, balanced, last, unbalanced int
}

func (s *choiceStats) add(o choiceStats) {
	s.users, s.balanced, s.last, s.unbalanced = s.users+o.users, s.balanced+o.balanced, s.last+o.last, s.unbalanced+o.unbalanced
}

func (s choiceStats) String() string {
	return fmt.Sprintf("%d users of choice counters judged by the serial order of their taps: %d by the balance of their answers too, %d by their last answer too; %d not by the balance (an op of unknown outcome)",
		s.users, s.balanced, s.last, s.unbalanced)
}

// choicesOf is a choice counter document's choices (nil: not one).
func choicesOf(d *pb.Document) []string {
	var out []string
	for _, v := range field(d, "choices").GetArrayValue().GetValues() {
		out = append(out, v.GetStringValue())
	}
	return out
}

// countsOf is a document's counts by choice (a shard's, a bucket's, the
// counter's).
func countsOf(d *pb.Document) map[string]int64 {
	out := map[string]int64{}
	for c, v := range field(d, "counts").GetMapValue().GetFields() {
		out[c] = v.GetIntegerValue()
	}
	return out
}

// choiceSums are the sums of counter id's shards' counts by choice as of
// at (zero: now).
func (w *world) choiceSums(id string, at time.Time) map[string]int64 {
	out := map[string]int64{}
	for _, d := range w.under(id, "shards", at) {
		for c, n := range countsOf(d) {
			out[c] += n
		}
	}
	return out
}

// differ lists the choices whose counts differ between a and b (a
// missing one is 0), in order.
func differ(a, b map[string]int64) []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(a)) {
		if a[c] != b[c] {
			out = append(out, c)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[c]; !ok && b[c] != 0 {
			out = append(out, c)
		}
	}
	return out
}

// checkChoicesAlways holds at every commit, for a live choice counter:
// every member document holds one of its choices, and each choice's sum
// over the shards is the number of member documents holding it (the
// count's, the number of members, checkAlways checks).
func (w *world) checkChoicesAlways(id string, d *pb.Document) {
	choices := choicesOf(d)
	if choices == nil {
		return
	}
	held := map[string]int64{}
	for _, m := range w.under(id, "members", time.Time{}) {
		c := field(m, "choice").GetStringValue()
		if !slices.Contains(choices, c) {
			w.problem("member %s of choice counter %s holds choice %q, not one of %v", m.GetName()[len(root):], id, c, choices)
		}
		held[c]++
	}
	sums := w.choiceSums(id, time.Time{})
	for _, c := range differ(sums, held) {
		w.problem("choice counter %s counts %d under %q in its shards; %d member documents hold it", id, sums[c], c, held[c])
	}
}

// checkStrongCounts: a strong read of a choice counter answers every
// choice's count, as its shards held it at the read's time, and they add
// up to its count: nobody counted under two choices, or under none.
func (w *world) checkStrongCounts(o *op) {
	if !isChoice(o.counter) || !o.ok() {
		return
	}
	var total int64
	for _, c := range reactionChoices {
		total += o.answer.Counts[c]
	}
	if len(o.answer.Counts) != len(reactionChoices) || total != o.answer.Count {
		w.problem("%s answered count %d and counts %v: the counts of %v add up to %d", o, o.answer.Count, o.answer.Counts, reactionChoices, total)
	}
	at := o.asOf()
	if sums := w.choiceSums(o.counter, at); len(differ(o.answer.Counts, sums)) > 0 {
		w.problem("%s answered counts %v as of %s; the shards held %v", o, o.answer.Counts, w.rel(at), sums)
	}
}

// checkChoiceRollup, once everything is reconciled: the counter
// document's counts (the roll-up's) are its shards' sums by choice, and
// so are, at every granularity, its window buckets' counts added up.
func (w *world) checkChoiceRollup(id string, d *pb.Document) {
	sums := w.choiceSums(id, time.Time{})
	if counts := countsOf(d); len(differ(counts, sums)) > 0 {
		w.problem("choice counter %s's roll-up says counts %v, its shards %v, after reconcile", id, counts, sums)
	}
	for _, g := range windows.All {
		total := map[string]int64{}
		for _, b := range w.under(id, "windows", time.Time{}) {
			if field(b, "granularity").GetStringValue() == string(g) {
				for c, n := range countsOf(b) {
					total[c] += n
				}
			}
		}
		if len(differ(total, sums)) > 0 {
			w.problem("choice counter %s's %s buckets hold counts %v in all, its shards %v", id, g, total, sums)
		}
	}
}

// checkChoices: on a choice counter's last incarnation, each user's
// taps, reads and member document fit one serial order (checkChoicesOf),
// and each keyed tap answers as its key's record says (checkChoiceKey).
func (w *world) checkChoices(id string) {
	created := w.creations(id)
	k := len(created)
	from := created[k-1]
	who := map[string]bool{}
	for _, o := range w.ops {
		if o.counter == id && (o.react || o.fn == "getCounter") {
			who[o.user] = true
		}
	}
	prefix := root + "counters/" + id + "/members/"
	for _, rec := range w.commits {
		for _, ch := range rec.changes {
			if u, ok := strings.CutPrefix(ch.Name, prefix); ok && !rec.at.Before(from.at) {
				who[u] = true
			}
		}
	}
	for _, u := range slices.Sorted(maps.Keys(who)) {
		w.checkChoicesOf(id, u, k, from)
	}
}

// checkChoicesOf: user u's answers on counter id's incarnation k fit one
// serial order of their taps, from no choice: each tap, taken at an
// instant while it ran (one of unknown outcome perhaps never, or up to
// its commit's deadline after it ended), answers previous, the user's
// choice before it, and choice, the one it asked for, which it is after,
// changed when they differ; each read of the user's choice, and the
// member document after each commit and at the end, sees the choice of
// that order. When every tap's outcome is known, the answers balance too:
// each choice is entered by changed answers as often as it is left, but
// the final one once more and "" (none) once less; and when the taps did
// not overlap, the last one's choice is the final one.
func (w *world) checkChoicesOf(id, u string, k int, from commitRec) {
	name := root + "counters/" + id + "/members/" + u
	forever := w.endAt.Add(time.Hour)
	var steps []*cop
	byKey := map[string]*cop{}
	firsts := map[string]int{} // of each key, the taps answered as its first
	for _, o := range w.ops {
		if o.counter != id || o.user != u || !w.mine(o, k) {
			continue
		}
		if o.fn == "getCounter" {
			if o.ok() && o.answer.Choice != nil {
				steps = append(steps, &cop{start: o.start, end: o.end, read: true, want: *o.answer.Choice, what: o.String()})
			}
			continue
		}
		if !o.react {
			continue
		}
		if o.key != "" {
			w.checkChoiceKey(o, id, from.at)
		}
		if o.done && o.status >= 400 && o.status < 500 {
			if o.status != 409 && o.status != 404 && !w.refusedByErasure(o) {
				w.problem("%s was refused: %s", o, o.code())
			}
			continue
		}
		c := &cop{start: o.start, end: o.end, want: o.choice, optional: !o.ok(), what: o.String()}
		if o.unknown() {
			c.end = forever // it may apply up to its commit's deadline after it ended
			if o.done {
				c.end = o.end.Add(deadline)
			}
		}
		if o.ok() {
			if o.answer.Choice == nil || o.answer.Previous == nil || o.answer.Changed == nil {
				w.problem("%s answered no choice, previous or changed", o)
				c.optional = true
			} else {
				c.prev, c.got, c.changed = *o.answer.Previous, *o.answer.Choice, *o.answer.Changed
			}
			if !c.optional && (c.got != o.choice || c.changed != (c.prev != c.got)) {
				w.problem("%s asked for %q and answered previous %q choice %q changed %v", o, o.choice, c.prev, c.got, c.changed)
			}
		}
		if o.key != "" {
			// The taps of a key its record holds the outcome of are one
			// request: a retry, a replay, the first one; another choice
			// never applied. Without a record, or answered before it, a
			// tap changed nothing (of a counter nobody used): a request of
			// its own.
			recd, at := w.keyRecord(id, u, o.key, from.at)
			switch {
			case recd == nil:
			case field(recd, "choice").GetStringValue() != o.choice:
				continue
			case o.ok() && !o.answer.Replayed && o.end.Before(at.when):
			default:
				if o.ok() && !o.answer.Replayed {
					firsts[o.key]++
					if firsts[o.key] == 2 {
						w.problem("%s answered as the first tap of its key, as another did", o)
					}
				}
				if g := byKey[o.key]; g != nil {
					g.start, g.end = minTime(g.start, c.start), maxTime(g.end, c.end)
					if g.optional && !c.optional {
						g.optional, g.prev, g.got, g.changed, g.what = false, c.prev, c.got, c.changed, c.what
					}
					continue
				}
				byKey[o.key] = c
			}
		}
		steps = append(steps, c)
	}
	for _, c := range w.erasedWhile(u) {
		start, end := c.window(forever)
		steps = append(steps, &cop{start: start, end: end, want: "", optional: true, what: c.String()})
	}
	for _, rec := range w.commits {
		if rec.at.Before(from.at) {
			continue
		}
		for _, ch := range rec.changes {
			if ch.Name == name {
				steps = append(steps, &cop{start: rec.when, end: rec.when, read: true, want: field(ch.After, "choice").GetStringValue(),
					what: "the member document at " + w.rel(rec.when)})
			}
		}
	}
	final := ""
	if ds := w.model.Documents(name, time.Time{}); len(ds) > 0 && ds[0].GetName() == name {
		final = field(ds[0], "choice").GetStringValue()
	}
	steps = append(steps, &cop{start: forever, end: forever, read: true, want: final, what: "the member document at the end"})
	w.choices.users++
	switch ok, judged := serialChoices(steps); {
	case !judged:
		w.undecided++ // too many taps of unknown outcome at once to search every order
	case !ok:
		var lines []string
		for _, c := range steps {
			lines = append(lines, c.String(w))
		}
		w.problem("%s's reactions on %s fit no serial order:\n  %s", u, id, strings.Join(lines, "\n  "))
	}
	w.checkBalance(id, u, steps, final)
}

// checkBalance: when all of a user's taps have a known outcome, for each
// choice X, the changed answers entering X less those leaving it are
// [X is the final choice] − [X is "" (none)]; and when no two taps
// overlapped, the last one's choice is the final one.
func (w *world) checkBalance(id, u string, steps []*cop, final string) {
	var taps []*cop
	for _, c := range steps {
		if c.read {
			continue
		}
		if c.optional {
			w.choices.unbalanced++
			return
		}
		taps = append(taps, c)
	}
	w.choices.balanced++
	balance := map[string]int64{"": -1}
	balance[final]++
	for _, c := range taps {
		if c.changed {
			balance[c.got]--
			balance[c.prev]++
		}
	}
	if bad := differ(balance, nil); len(bad) > 0 {
		w.problem("%s's changed answers on %s, ending on %q, do not balance: %v entered less left is off by %v", u, id, final, bad, balance)
	}
	for i := 1; i < len(taps); i++ {
		if !taps[i].start.After(taps[i-1].end) {
			return // they overlapped
		}
	}
	if n := len(taps); n > 0 {
		w.choices.last++
		if taps[n-1].got != final {
			w.problem("%s's last tap on %s answered %q; the member document holds %q", u, id, taps[n-1].got, final)
		}
	}
}

// checkChoiceKey: a keyed tap that was acknowledged (a replay too)
// answers what its key's record, written in the commit that applied the
// key's first tap, holds, and only a replay answers a record older than
// itself; a 409 only when the record, or another tap of the key being
// taken, holds another choice. Only a removal that changed nothing of a
// counter nobody used writes no record (nothing at all).
func (w *world) checkChoiceKey(o *op, id string, from time.Time) {
	recd, at := w.keyRecord(id, o.user, o.key, from)
	if recd != nil && at.when.After(o.end) {
		recd = nil // not yet when o ended
	}
	switch {
	case o.ok() && o.answer.Choice != nil && o.answer.Previous != nil && o.answer.Changed != nil:
		if recd == nil {
			if !(o.absent && !*o.answer.Changed) {
				w.problem("%s answered previous %q choice %q, and its key has no record: a retry with it would apply again", o, *o.answer.Previous, *o.answer.Choice)
			}
			return
		}
		choice, previous, changed := field(recd, "choice").GetStringValue(), field(recd, "previous").GetStringValue(), field(recd, "changed").GetBooleanValue()
		if *o.answer.Choice != choice || *o.answer.Previous != previous || *o.answer.Changed != changed {
			w.problem("%s answered previous %q choice %q changed %v; its key's record holds previous %q choice %q changed %v",
				o, *o.answer.Previous, *o.answer.Choice, *o.answer.Changed, previous, choice, changed)
		}
		if !o.answer.Replayed && at.when.Before(o.start) {
			w.problem("%s answered as the first of its key, which was recorded at %s, before it began", o, w.rel(at.when))
		}
	case o.code() == "ALREADY_EXISTS":
		if recd != nil {
			if field(recd, "choice").GetStringValue() == o.choice {
				w.problem("%s answered 409; its key's record holds the same choice", o)
			}
			return
		}
		if !slices.ContainsFunc(w.ops, func(x *op) bool {
			return x.counter == id && x.user == o.user && x.key == o.key && x.choice != o.choice && x.start.Before(o.end)
		}) {
			w.problem("%s answered 409; its key had no record, and no other choice was sent with it", o)
		}
	}
}

// keyRecord is user u's record of key on counter id, as the first commit
// that wrote it from from on (the incarnation's creation) wrote it, and
// that commit; nil if none did.
func (w *world) keyRecord(id, u, key string, from time.Time) (*pb.Document, commitRec) {
	name := root + "counters/" + id + "/idempotency_keys/" + dm.KeyHash(u, key)
	for _, rec := range w.commits {
		if rec.at.Before(from) {
			continue
		}
		for _, ch := range rec.changes {
			if ch.Name == name && ch.Before == nil && ch.After != nil {
				return ch.After, rec
			}
		}
	}
	return nil, commitRec{}
}

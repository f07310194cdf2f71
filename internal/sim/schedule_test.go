package sim

import (
	"strings"
	"time"
)

// randomSchedule plans the operations: the plain counters are created at
// the start (some unique), then random work until activeFor.
func (w *world) randomSchedule() {
	start := w.epoch
	w.quietAt = start.Add(w.cfg.activeFor)
	w.endAt = w.quietAt.Add(10 * time.Minute)
	for i, id := range w.counters {
		if strings.Contains(id, ":") {
			continue // created by its first use
		}
		w.at(start, func() { w.create(id, i%2 == 0) })
	}
	for range w.cfg.crashes {
		w.at(start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor)))), func() { w.crash(w.pick()) })
	}
	for range w.cfg.ops {
		t := start.Add(10*time.Millisecond + time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
		id := w.counters[w.rng.IntN(len(w.counters))]
		switch k := w.rng.IntN(100); {
		case k < 45:
			w.at(t, func() { w.increment(id, w.pick()) })
		case k < 55:
			w.at(t, func() { w.batch() })
		case k < 63:
			w.at(t, func() { w.reconcileOn(w.pick(), id) })
		case k < 70:
			w.at(t, func() { w.strongOn(w.pick(), id) })
		case !w.cfg.lifecycle:
			w.at(t, func() { w.increment(id, w.pick()) })
		case k < 78:
			w.at(t, func() { w.reset(id) })
		case k < 85:
			w.at(t, func() { w.reshard(id) })
		case k < 92:
			w.at(t, func() { w.deleteOn(w.pick(), id) })
			// …and created again around when its id is free (purge_after:
			// lateWrites after the tombstone's commit lands, by its
			// deadline), mostly after it, sometimes by two clients at
			// once, while reconcile purges the tombstone.
			reuse := t.Add(deadline + lateWrites + time.Duration(w.rng.IntN(2500)-500)*time.Millisecond)
			w.at(reuse, func() { w.create(id, w.rng.IntN(2) == 0) })
			if w.rng.IntN(2) == 0 {
				w.at(reuse.Add(time.Duration(w.rng.IntN(300))*time.Millisecond), func() { w.create(id, w.rng.IntN(2) == 0) })
			}
			if w.rng.IntN(2) == 0 {
				w.at(reuse.Add(time.Duration(w.rng.IntN(600)-300)*time.Millisecond), func() { w.reconcileOn(w.pick(), id) })
			}
		default:
			w.at(t, func() { w.create(id, w.rng.IntN(2) == 0) })
		}
	}
	if w.cfg.kinds {
		for range 1 + w.rng.IntN(4) {
			t := start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
			w.at(t, func() { w.read(noPost, w.pick(), users[w.rng.IntN(len(users))], "") })
		}
		// A watched post: a crowd views the distinct counter at once,
		// through every instance, so that commits race for a shard's
		// sketch.
		t := start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
		for i, u := range reactors {
			w.at(t.Add(time.Duration(i)*3*time.Millisecond), func() { w.read(w.watched(), w.pick(), u, "") })
		}
	}
	// Feeds' pages, read while the work goes on: a like or a switch lands
	// while one is read, a deletion and a re-creation too.
	for range w.rng.IntN(6) {
		t := start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor + lateWrites))))
		w.at(t, func() { w.feed(w.pick(), users[w.rng.IntN(len(users))]) })
	}
	for _, id := range w.counters {
		if isChoice(id) {
			w.reactions(id)
		}
	}
	if w.cfg.audits {
		for range 1 + w.rng.IntN(3) {
			w.at(start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor+lateWrites)))), func() { w.audit(w.pick()) })
		}
	}
	if w.cfg.hot {
		// A post whose likes and views pour in: increments every few
		// milliseconds through every instance, while the counters cached
		// at the start expire, so flushes mix ops read before and after.
		// It straddles the end of the cached counters read at the start.
		id := w.counters[w.rng.IntN(len(w.counters))]
		from := start.Add(cacheFor - 500*time.Millisecond + time.Duration(w.rng.IntN(1000))*time.Millisecond)
		for t := from; t.Before(from.Add(1500 * time.Millisecond)); t = t.Add(time.Duration(5+w.rng.IntN(15)) * time.Millisecond) {
			w.at(t, func() { w.increment(id, w.pick()) })
		}
	}
	if w.cfg.resetStorm && len(w.counters) > 1 {
		// Ten resets of one counter at once, through every instance, as a
		// client retrying after 503s would send them.
		t := start.Add(w.cfg.activeFor / 2)
		for range 10 {
			w.at(t, func() { w.reset(w.counters[1]) })
		}
	}
	if w.cfg.contention {
		// One user toggles a like through every instance, keyless, every
		// 10–30 ms for a second, while others like the same counter.
		from := start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
		w.contentionFrom = from
		for t := from; t.Before(from.Add(time.Second)); t = t.Add(time.Duration(10+w.rng.IntN(20)) * time.Millisecond) {
			w.at(t, func() { w.like(w.counters[0], w.pick(), users[0], "", int64(1-2*w.rng.IntN(2))) })
			if w.rng.IntN(4) == 0 {
				w.at(t, func() {
					for _, u := range users[1:] {
						w.like(w.counters[0], w.pick(), u, "", 1)
					}
				})
			}
		}
	}
	if w.cfg.erasures {
		w.planErasures(start)
	}
	// Scheduled runs come in the middle of the work too: what they pass
	// must not be written again unmarked.
	for range w.rng.IntN(4) {
		w.at(start.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor+lateWrites)))), func() { w.sweep(w.pick()) })
	}
	w.scheduledRuns(w.quietAt)
	// Rankings, once every event is delivered (retries included).
	w.at(w.quietAt.Add(lateWrites+9*time.Minute), func() { w.rankings(w.pick()) })
}

// scheduledRuns are the scheduled reconcile runs after quiet: once every
// delivery and retry is over and no late write can land, two runs over
// the counters the activity index marked, as Cloud Scheduler's job makes
// them. They alone heal a roll-up whose last event was lost and finish
// purges: the invariants at quiescence hold only if the index found every
// counter that needed it.
func (w *world) scheduledRuns(quiet time.Time) {
	for _, after := range []time.Duration{2 * time.Minute, 3 * time.Minute} {
		w.at(quiet.Add(lateWrites+after), func() { w.sweep(w.pick()) })
	}
}

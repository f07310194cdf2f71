package sim

import (
	"context"
	"fmt"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/activity"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/rollup"
)

// The operations, each run by an actor on one instance, with the store
// calls the service's handlers make for it.

// users are the uids of likes.
var users = []string{"u0", "u1", "u2", "u3", "u4", "u5"}

// randomSchedule plans the operations: every counter is created at the
// start (some unique), then random work until activeFor.
func (w *world) randomSchedule() {
	w.quietAt = epoch.Add(w.cfg.activeFor)
	w.endAt = w.quietAt.Add(5 * time.Minute)
	for i, id := range w.counters {
		if _, ok := kinds.Of(id); ok {
			continue // created by its first use
		}
		unique := i%2 == 0
		w.at(epoch, func() { w.create(id, unique) })
	}
	for range w.cfg.ops {
		t := epoch.Add(10*time.Millisecond + time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
		id := w.counters[w.rng.IntN(len(w.counters))]
		switch k := w.rng.IntN(100); {
		case k < 45:
			w.at(t, func() { w.increment(id, w.rng.IntN(len(w.instances)), 0) })
		case k < 55:
			w.at(t, func() { w.batch() })
		case k < 63:
			w.at(t, func() { w.reconcile(id) })
		case k < 70:
			w.at(t, func() { w.strong(id) })
		case !w.cfg.lifecycle:
			w.at(t, func() { w.increment(id, w.rng.IntN(len(w.instances)), 0) })
		case k < 78:
			w.at(t, func() { w.reset(id) })
		case k < 85:
			w.at(t, func() { w.reshard(id) })
		case k < 92:
			w.at(t, func() { w.delete(id) })
			// …and created again once its id is free, sometimes by two
			// clients at once, while reconcile purges the tombstone.
			reuse := t.Add(lateWrites + time.Duration(w.rng.IntN(2000))*time.Millisecond)
			w.at(reuse, func() { w.create(id, w.rng.IntN(2) == 0) })
			if w.rng.IntN(2) == 0 {
				w.at(reuse.Add(time.Duration(w.rng.IntN(300))*time.Millisecond), func() { w.create(id, w.rng.IntN(2) == 0) })
			}
			if w.rng.IntN(2) == 0 {
				w.at(reuse.Add(time.Duration(w.rng.IntN(600)-300)*time.Millisecond), func() { w.reconcile(id) })
			}
		default:
			w.at(t, func() { w.create(id, w.rng.IntN(2) == 0) })
		}
	}
	if w.cfg.resetStorm && len(w.counters) > 1 {
		// Ten resets of one counter at once, through every instance, as a
		// client retrying after 503s would send them.
		t := epoch.Add(w.cfg.activeFor / 2)
		for range 10 {
			w.at(t, func() { w.reset(w.counters[1]) })
		}
	}
	if w.cfg.contention {
		// One user toggles a like through every instance, keyless, every
		// 10–30 ms for a second, while others like the same counter in
		// batches.
		start := epoch.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor))))
		for t := start; t.Before(start.Add(time.Second)); t = t.Add(time.Duration(10+w.rng.IntN(20)) * time.Millisecond) {
			w.at(t, func() { w.like(w.counters[0], w.pick(), users[0], "") })
			if w.rng.IntN(4) == 0 {
				w.at(t, func() {
					for _, u := range users[1:] {
						w.like(w.counters[0], w.pick(), u, "")
					}
				})
			}
		}
	}
	// Scheduled runs come in the middle of the work too: what they pass
	// must not be written again unmarked.
	for range w.rng.IntN(4) {
		w.at(epoch.Add(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor+lateWrites)))), func() { w.sweep(w.pick()) })
	}
	w.scheduledRuns(w.quietAt)
}

// scheduledRuns are the scheduled reconcile runs after quiet: once every
// delivery and retry is over and no late write can land, two runs over the
// counters the activity index marked, as Cloud Scheduler's job makes them.
// They alone heal a roll-up whose last event was lost and finish purges:
// the invariants at quiescence hold only if the index found every counter
// that needed it.
func (w *world) scheduledRuns(quiet time.Time) {
	for _, after := range []time.Duration{30 * time.Second, 40 * time.Second} {
		w.at(quiet.Add(lateWrites+after), func() { w.sweep(w.pick()) })
	}
}

// sweep is one scheduled reconcile run on instance n (internal/service's
// reconcileActive, with the same parts).
func (w *world) sweep(n int) {
	inst := w.instances[n]
	o := w.newOp("sweep", "", n)
	w.spawn(o, func(ctx context.Context) error {
		run := activity.Run{Source: inst.store.Rollups, Page: 50, Concurrency: 1, Now: inst.clock.Now,
			Heal: func(ctx context.Context, id string) (time.Time, error) {
				out, err := inst.roller.Heal(ctx, id, false)
				if errs.Is(err, errs.NotFound) {
					return time.Time{}, nil
				}
				return out.Again, err
			}}
		now := inst.clock.Now()
		res, err := run.Do(ctx, w.sweepCursor, now.Add(-settings.ReconcileSettle()), now.Add(time.Minute))
		w.sweepCursor = res.Cursor
		w.tracef("  sweep: %+v", res)
		return err
	}, func(err error) { w.finish(o, err) })
}

func (w *world) newOp(kind, id string, inst int) *op {
	o := &op{n: len(w.ops), kind: kind, counter: id, inst: inst, incarnation: w.incarnation[id], start: w.now()}
	w.ops = append(w.ops, o)
	return o
}

// finish records an operation's end.
func (w *world) finish(o *op, err error) {
	o.done, o.err, o.end = true, err, w.now()
	w.tracef("  %s done: %v", o, err)
}

func (w *world) create(id string, unique bool) { w.createOn(w.pick(), id, unique) }

func (w *world) createOn(n int, id string, unique bool) {
	if kind, ok := kinds.Of(id); ok {
		w.createCounter(n, kind.Counter(id)) // an admin creates it ahead of its first use
		return
	}
	w.createCounter(n, counter.Counter{ID: id, NumShards: 1 + w.rng.IntN(4), Unique: unique, Origin: counter.ByAdmin, Ranked: true})
}

func (w *world) createCounter(n int, c counter.Counter) {
	inst := w.instances[n]
	o := w.newOp("create", c.ID, inst.n)
	w.spawn(o, func(ctx context.Context) error {
		_, err := inst.store.Counters.Create(ctx, c)
		return err
	}, func(err error) {
		w.finish(o, err)
		if errs.Is(err, errs.AlreadyExists) && !w.liveDuring(c.ID, o.start, o.end) {
			w.problem("%s answered ALREADY_EXISTS, and no counter %s was live while it ran", o, c.ID)
		}
	})
}

// increment is an increment request: it reads the counter as the
// handler does (the instance's cache), makes it a like or an unlike on a
// unique counter, and queues it in the instance's group commit. A keyed
// one that fails is retried with its key, as clients do.
func (w *world) increment(id string, inst int, attempt int) {
	delta := int64(1 + w.rng.IntN(5))
	if w.rng.IntN(3) == 0 {
		delta = -delta
	}
	if w.cfg.nearBound && w.rng.IntN(2) == 0 {
		delta = counter.MaxDelta
	}
	key := ""
	if w.rng.IntN(2) == 0 {
		key = fmt.Sprintf("k%d", w.rng.IntN(1_000_000))
	}
	o := w.newOp("increment", id, inst)
	o.delta, o.user, o.key, o.attempt, o.toggle = delta, users[w.rng.IntN(len(users))], key, attempt, true
	w.request(o)
}

// like toggles user's like of id through instance inst.
func (w *world) like(id string, inst int, user, key string) {
	o := w.newOp("increment", id, inst)
	o.delta, o.user, o.key, o.toggle = 1, user, key, true
	w.request(o)
}

// likeOnce is user's +1 on unique counter id through instance inst.
func (w *world) likeOnce(id string, inst int, user, key string) *op {
	o := w.newOp("increment", id, inst)
	o.delta, o.user, o.key = 1, user, key
	w.request(o)
	return o
}

// add is an increment of delta on a plain counter through instance inst.
func (w *world) add(id string, inst int, delta int64, key string) *op {
	o := w.newOp("increment", id, inst)
	o.delta, o.user, o.key = delta, "owner", key
	w.request(o)
	return o
}

// request is incrementCounter's handler for o: the counter's document
// from the instance's cache (or, of a kind, the one its first use
// creates), then the op in its group commit; on a unique
// counter the op adds (+1) or removes (−1) its user.
func (w *world) request(o *op) {
	inst := w.instances[o.inst]
	var unique bool
	var incarnation int
	r := w.newOp("request", o.counter, o.inst)
	w.spawn(r, func(ctx context.Context) error {
		c, err := inst.store.Counters.LiveOrNewCached(ctx, o.counter)
		unique, incarnation = c.Unique, w.incarnation[o.counter]
		if err == nil && c.Version.IsZero() {
			incarnation++ // of a kind, absent: the counter its commit creates (or meets)
			o.firstUse = true
		}
		return err
	}, func(err error) {
		w.finish(r, err)
		if err != nil {
			w.finish(o, err)
			return
		}
		if unique && o.toggle {
			o.delta = 1
			if w.rng.IntN(2) == 0 {
				o.delta = -1
			}
		}
		o.incarnation = incarnation // the counter it read
		w.enqueue(o)
	})
}

// pick is a random instance.
func (w *world) pick() int { return w.rng.IntN(len(w.instances)) }

// batch is a request of several increments of several counters.
func (w *world) batch() {
	inst := w.pick()
	for range 2 + w.rng.IntN(6) {
		w.increment(w.counters[w.rng.IntN(len(w.counters))], inst, 0)
	}
}

func (w *world) counterDoc(id string, at time.Time) *pb.Document {
	docs := w.model.Documents(root+"counters/"+id, at)
	for _, d := range docs {
		if d.GetName() == root+"counters/"+id {
			return d
		}
	}
	return nil
}

// enqueue is group commit: an instance flushes each counter's queued
// increments in batches, one flush of a counter at a time.
func (w *world) enqueue(o *op) {
	inst := w.instances[o.inst]
	inst.queued[o.counter] = append(inst.queued[o.counter], o)
	if inst.busy[o.counter] {
		return
	}
	inst.busy[o.counter] = true
	w.flush(inst, o.counter)
}

func (w *world) flush(inst *instance, id string) {
	batch := inst.queued[id][:min(maxBatch, len(inst.queued[id]))]
	inst.queued[id] = inst.queued[id][len(batch):]
	ops := make([]firestoredb.IncrementOp, len(batch))
	for i, o := range batch {
		// Its request paid for its share of the commits' reads.
		ctx, led := ledger.New(context.Background(), false)
		ledger.Pay(ctx, firestoredb.MaxReadsPerOp)
		ops[i] = firestoredb.IncrementOp{Delta: o.delta, User: o.user, Key: o.key, Ledger: led}
	}
	f := w.newOp("flush", id, inst.n)
	f.batch = batch
	var results []firestoredb.IncrementResult
	a := w.spawn(f, func(ctx context.Context) error {
		results = inst.store.Increments.Apply(ctx, id, ops)
		return nil
	}, func(error) {
		w.finish(f, nil)
		for i, o := range batch {
			if o.firstUse && f.committedTo != 0 {
				// Its request's guess aside (another first use may have
				// created the counter since), it counts where its commit did.
				o.incarnation = f.committedTo
			}
			o.result = results[i]
			w.finish(o, results[i].Err)
			if n := ops[i].Ledger.Reads(); n > firestoredb.MaxReadsPerOp {
				w.problem("%s: its share of the commits' reads is %d, past MaxReadsPerOp (%d)", o, n, firestoredb.MaxReadsPerOp)
			}
			o.commits = f.commits
			w.checkContention(o, f)
			if o.key != "" && errs.Is(o.err, errs.Unavailable) && o.attempt < 3 {
				// The client retries with the same key.
				retry := *o
				w.at(w.now().Add(time.Duration(100+w.rng.IntN(400))*time.Millisecond), func() {
					r := w.newOp("increment", retry.counter, w.pick())
					r.delta, r.user, r.key, r.attempt = retry.delta, retry.user, retry.key, retry.attempt+1
					r.incarnation, r.firstUse = retry.incarnation, retry.firstUse
					w.enqueue(r)
				})
			}
		}
		if len(inst.queued[id]) > 0 {
			w.flush(inst, id)
		} else {
			inst.busy[id] = false
		}
	})
	a.CancelAt(w.now().Add(deadline)) // a flush's commits run under FIRESTORE_DEADLINE, as the service's do
}

func (w *world) reset(id string) {
	v := int64(w.rng.IntN(100))
	if w.cfg.resetStorm {
		v = 0
	}
	if w.cfg.nearBound {
		// As near the bound as a reset may set, or nearer, within reach of
		// a few increments (refused: instances would not see it coming).
		v = counter.MaxReset - int64(w.rng.IntN(3)-1)*counter.MaxDelta
		if w.rng.IntN(3) == 0 {
			v = counter.MaxCount - int64(w.rng.IntN(3))*counter.MaxDelta
		}
		if w.rng.IntN(2) == 0 {
			v = -v
		}
	}
	w.resetOn(w.pick(), id, v)
}

func (w *world) resetOn(n int, id string, v int64) {
	inst := w.instances[n]
	o := w.newOp("reset", id, inst.n)
	o.value = v
	w.spawn(o, func(ctx context.Context) error {
		at, err := inst.store.Counters.Reset(ctx, id, o.value)
		o.asOf = at
		return err
	}, func(err error) {
		w.finish(o, err)
		w.checkReset(o)
	})
}

func (w *world) reshard(id string) {
	inst := w.instances[w.pick()]
	o := w.newOp("reshard", id, inst.n)
	n := 1 + w.rng.IntN(6)
	w.spawn(o, func(ctx context.Context) error {
		_, _, _, err := inst.store.Counters.Reshard(ctx, id, n, lateWrites, "sim")
		return err
	}, func(err error) { w.finish(o, err) })
}

func (w *world) delete(id string) { w.deleteOn(w.pick(), id) }

func (w *world) deleteOn(n int, id string) {
	inst := w.instances[n]
	o := w.newOp("delete", id, inst.n)
	w.spawn(o, func(ctx context.Context) error {
		_, err := inst.store.Counters.Delete(ctx, id, lateWrites)
		return err
	}, func(err error) {
		w.finish(o, err)
		if d := w.counterDoc(id, time.Time{}); err == nil && isLive(d) && w.incarnation[id] == o.incarnation {
			w.problem("%s answered success, and the counter is still live", o)
		}
	})
}

// reconcile is reconcileCounters for one counter: reconcile a live
// counter, or go on purging a deleted one.
func (w *world) reconcile(id string) { w.reconcileOn(w.pick(), id) }

func (w *world) reconcileOn(n int, id string) {
	inst := w.instances[n]
	o := w.newOp("reconcile", id, inst.n)
	d := w.counterDoc(id, time.Time{})
	o.onTombstone = d != nil && !isLive(d)
	w.spawn(o, func(ctx context.Context) error {
		_, err := inst.roller.Heal(ctx, id, o.onTombstone)
		return err
	}, func(err error) { w.finish(o, err) })
}

func (w *world) strong(id string) { w.strongOn(w.pick(), id) }

func (w *world) strongOn(n int, id string) {
	inst := w.instances[n]
	o := w.newOp("strong", id, inst.n)
	w.spawn(o, func(ctx context.Context) error {
		_, v, at, err := inst.store.Counters.Strong(ctx, id)
		o.value, o.asOf = v, at
		return err
	}, func(err error) {
		w.finish(o, err)
		w.checkStrong(o)
	})
}

// deliver hands a shard write's event to an instance's roll-up, as
// Eventarc does, and delivers it again after an error a retry can help.
func (w *world) deliver(ev rollup.Event, incarnation, attempt int) {
	inst := w.instances[w.pick()]
	o := w.newOp("rollup", ev.CounterID, inst.n)
	o.incarnation = incarnation
	w.spawn(o, func(ctx context.Context) error {
		return inst.roller.Include(ctx, ev)
	}, func(err error) {
		w.finish(o, err)
		if !rollup.Settled(err) && attempt < 10 {
			w.at(w.now().Add(time.Duration(500+w.rng.IntN(1500))*time.Millisecond), func() { w.deliver(ev, incarnation, attempt+1) })
		}
	})
}

// onCommit is told every commit of the model: it keeps the log, follows
// creations, turns shard writes into events, and checks the invariants
// that hold at every commit.
func (w *world) onCommit(at time.Time, changes []fsmodel.Change) {
	var by *op
	if a := w.s.Running(); a != nil {
		by = opOf(a)
		by.commits = append(by.commits, at)
	}
	w.commits = append(w.commits, commitRec{at: at, by: by, changes: changes})
	touched := map[string]bool{}
	for _, ch := range changes {
		id, coll, _ := counterOf(ch.Name)
		if id == "" {
			continue
		}
		touched[id] = true
		if coll == "" && isLive(ch.After) && !isLive(ch.Before) {
			w.incarnation[id]++
			w.createdAt[id] = append(w.createdAt[id], at)
			w.tracef("  %s#%d created", id, w.incarnation[id])
		}
		if coll == "" && ch.After == nil && ch.Before != nil {
			w.dropped[id] = at
		}
		if by != nil && by.kind == "reset" {
			w.wasReset[fmt.Sprintf("%s#%d", id, w.incarnation[id])] = true
		}
	}
	if by != nil && by.kind == "flush" {
		by.committedTo = w.incarnation[by.counter]
	}
	w.checkPurge(by, changes, at)
	for _, ch := range changes {
		id, coll, _ := counterOf(ch.Name)
		if coll != firestoredb.ShardsCollection {
			continue
		}
		w.events++
		ev := rollup.Event{ID: fmt.Sprintf("ev%d", w.events), CounterID: id, WrittenAt: at, Deleted: ch.After == nil}
		if w.noisy() && w.rng.Float64() < w.cfg.pDrop {
			continue // the event is lost
		}
		copies := 1
		if w.noisy() && w.rng.Float64() < w.cfg.pDup {
			copies = 2
		}
		inc := w.incarnation[id]
		for range copies {
			delay := time.Duration(1+w.rng.IntN(100)) * time.Millisecond
			if w.noisy() && w.rng.Float64() < w.cfg.pLong {
				delay += time.Duration(w.rng.IntN(3000)) * time.Millisecond
			}
			w.at(at.Add(delay), func() { w.deliver(ev, inc, 0) })
		}
	}
	for id := range touched {
		w.checkAlways(id)
	}
}

package rollup

import (
	"container/heap"
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/shardcount/shardcount/internal/logging"
)

// The scheduler.

// actor is a goroutine of the simulation: one delivery or reconcile run.
type actor struct {
	w       *world
	id      int
	kind    string
	ctx     context.Context
	cancel  context.CancelFunc
	reply   chan reply
	pending *item // its call in the timeline, while it waits
	done    func(error)
}

type call struct {
	op      string
	sleep   time.Duration
	mutates bool
	apply   func(w *world) any
}

type reply struct {
	v   any
	err error
}

type msg struct {
	a    *actor
	c    *call // nil when the actor finished
	err  error
	done bool
}

type actorKey struct{}

func actorOf(ctx context.Context) *actor { return ctx.Value(actorKey{}).(*actor) }

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

// spawn starts fn as an actor and runs it until it first blocks.
func (w *world) spawn(kind string, instance int, fn func(ctx context.Context) error, done func(error)) {
	w.nextID++
	a := &actor{w: w, id: w.nextID, kind: kind, reply: make(chan reply), done: done}
	a.ctx, a.cancel = context.WithCancel(logging.NewContext(context.Background(), quiet))
	a.ctx = context.WithValue(a.ctx, actorKey{}, a)
	w.actors[a.id] = a
	if w.now.Before(w.quietAt) && w.rng.Float64() < w.cfg.pCancel {
		// The instance stops, or the function times out, during the call.
		w.queue.push(w, w.now.Add(time.Duration(w.rng.IntN(3000))*time.Millisecond), func() { a.cancelNow() })
	}
	go func() {
		err := fn(a.ctx)
		w.msgs <- msg{a: a, err: err, done: true}
	}()
	w.await()
}

// call blocks the actor until the scheduler executes c.
func (a *actor) call(c *call) (any, error) {
	a.w.msgs <- msg{a: a, c: c}
	r := <-a.reply
	return r.v, r.err
}

// await waits for the running actor to block or finish.
func (w *world) await() {
	m := <-w.msgs
	a := m.a
	if m.done {
		delete(w.actors, a.id)
		a.done(m.err)
		return
	}
	c := m.c
	at := w.now.Add(c.sleep)
	if c.op != "Sleep" {
		at = w.now.Add(w.latency(c.op, a))
	}
	a.pending = w.queue.push(w, at, func() { w.execute(a, c) })
}

// execute runs an actor's blocked call at its time and resumes the actor.
func (w *world) execute(a *actor, c *call) {
	a.pending = nil
	var r reply
	switch f := w.fault(c.op, a, w.now); {
	case a.ctx.Err() != nil:
		if c.apply != nil && c.mutates && w.rng.IntN(2) == 0 {
			c.apply(w) // cancelled after the request left
		}
		r.err = a.ctx.Err()
	case c.apply == nil: // a sleep
	case f == failBefore || f == failAfter && !c.mutates:
		r.err = w.faultError()
	case f == failAfter:
		c.apply(w) // applied, but the answer is lost
		r.err = w.faultError()
	default:
		r.v = c.apply(w)
	}
	w.tracef("  actor %d (%s) %s -> %v %v", a.id, a.kind, c.op, r.v, r.err)
	a.reply <- r
	w.await()
}

// abandon releases a goroutine left blocked when a schedule is cut short.
func (a *actor) abandon() {
	a.cancel()
	if a.pending != nil {
		go func() {
			for range a.w.msgs {
			}
		}()
		a.reply <- reply{err: context.Canceled}
	}
}

func (a *actor) cancelNow() {
	a.cancel()
	if a.pending != nil { // wake it now rather than when its call would end
		a.pending.at = a.w.now
		heap.Fix(&a.w.queue, a.pending.index)
	}
}

// timeline is the scheduler's queue: a heap by time, ties broken by the
// order of insertion.
type timeline []*item

type item struct {
	at    time.Time
	seq   int
	index int
	fire  func()
}

func (q *timeline) push(w *world, at time.Time, f func()) *item {
	w.seq++
	it := &item{at: laterOf(at, w.now), seq: w.seq, fire: f}
	heap.Push(q, it)
	return it
}

func (q timeline) Len() int { return len(q) }
func (q timeline) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q timeline) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *timeline) Push(x any) {
	it := x.(*item)
	it.index = len(*q)
	*q = append(*q, it)
}
func (q *timeline) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

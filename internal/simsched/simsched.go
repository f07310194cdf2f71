// Package simsched schedules the project's deterministic simulations
// (internal/rollup's and internal/sim's, in their tests). Goroutines, the
// actors, run one at a time: each blocks on calls, which the scheduler runs
// at their time on a virtual timeline, failing some as its hooks say, and
// then resumes the caller. Everything random comes from one seeded source,
// so a seed replays one schedule exactly.
package simsched

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// Seeds are the seeds a simulation test runs: only one when it is set
// (a replay), else 1 to n.
func Seeds(one uint64, n int) []uint64 {
	if one != 0 {
		return []uint64{one}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// Fault is what becomes of a call.
type Fault int

const (
	NoFault    Fault = iota
	FailBefore       // it fails before it applies
	FailAfter        // a mutating call applies, and its answer is lost
)

// Call is what an actor blocks on: a call to apply at its time, or a
// sleep (no Apply).
type Call struct {
	What    string
	Sleep   time.Duration
	Mutates bool
	Apply   func() (any, error)
}

// Scheduler runs actors one at a time on a virtual timeline.
type Scheduler struct {
	// Latency is how long a call takes (nil: a millisecond).
	Latency func(a *Actor, c *Call) time.Duration
	// Fault says whether a call fails when it runs (nil: never), and
	// FaultError what it then returns.
	Fault      func(a *Actor, c *Call) Fault
	FaultError func() error
	// AnswerDelay, when set, is how long the answer of a call that ran
	// takes to come back (a commit applied long before its caller learns
	// so); an actor whose context ends meanwhile gets its error instead.
	AnswerDelay func(a *Actor, c *Call) time.Duration
	// Trace, when set, is told the outcome of every call.
	Trace func(a *Actor, c *Call, err error)

	now     time.Time
	rng     *rand.Rand
	queue   timeline
	seq     int
	msgs    chan msg
	actors  map[int]*Actor
	nextID  int
	running *Actor
}

// New returns a scheduler whose time starts at start; rng decides whether
// a call cut short by its context applied nevertheless.
func New(start time.Time, rng *rand.Rand) *Scheduler {
	return &Scheduler{now: start, rng: rng, msgs: make(chan msg), actors: map[int]*Actor{}}
}

// Now is the virtual time.
func (s *Scheduler) Now() time.Time { return s.now }

// At runs f at t (now, if t has passed).
func (s *Scheduler) At(t time.Time, f func()) { s.push(t, f) }

// Latest is the time of the last thing planned.
func (s *Scheduler) Latest() time.Time {
	var last time.Time
	for _, it := range s.queue {
		if it.at.After(last) {
			last = it.at
		}
	}
	return last
}

// Running is the actor whose call is being applied, nil between calls: a
// model can tell who made a commit.
func (s *Scheduler) Running() *Actor { return s.running }

// Actors are the actors still running, in the order they started.
func (s *Scheduler) Actors() []*Actor {
	out := make([]*Actor, 0, len(s.actors))
	for _, a := range s.actors {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Actor) int { return a.ID - b.ID })
	return out
}

// Run plays the timeline until nothing is left to happen. It reports
// false when something was still to happen after deadline: the actors
// still running are then abandoned.
func (s *Scheduler) Run(deadline time.Time) bool {
	for s.queue.Len() > 0 {
		it := heap.Pop(&s.queue).(*item)
		if it.at.After(deadline) {
			for _, a := range s.Actors() {
				a.abandon()
			}
			return false
		}
		if it.at.After(s.now) {
			s.now = it.at
		}
		it.fire()
	}
	return true
}

// Actor is a goroutine of the simulation.
type Actor struct {
	ID int
	// Tag is what the actor runs for, the simulation's own bookkeeping.
	Tag any
	// Calls counts the calls it made so far.
	Calls int
	// Faulted is set when one of its calls failed, or its context ended
	// during one.
	Faulted bool

	s       *Scheduler
	ctx     context.Context
	cancel  context.CancelFunc
	reply   chan reply
	pending *item // its call in the timeline, while it waits
	done    func(*Actor, error)
}

type actorKey struct{}

// ActorOf is the actor running with ctx.
func ActorOf(ctx context.Context) *Actor { return ctx.Value(actorKey{}).(*Actor) }

// Spawn starts fn as an actor, in a context of its own under ctx, and runs
// it until it first blocks; done is told its end.
func (s *Scheduler) Spawn(ctx context.Context, tag any, fn func(context.Context) error, done func(*Actor, error)) *Actor {
	s.nextID++
	a := &Actor{ID: s.nextID, Tag: tag, s: s, reply: make(chan reply), done: done}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.ctx = context.WithValue(a.ctx, actorKey{}, a)
	s.actors[a.ID] = a
	go func() {
		err := fn(a.ctx)
		s.msgs <- msg{a: a, err: err, done: true}
	}()
	s.await()
	return a
}

// Block hands c to the scheduler and waits for its outcome.
func (a *Actor) Block(c *Call) (any, error) {
	a.s.msgs <- msg{a: a, c: c}
	r := <-a.reply
	return r.v, r.err
}

// Cancel ends the actor's context now (its instance stops, its request
// times out) and wakes it if it waits on a call.
func (a *Actor) Cancel() {
	a.cancel()
	if a.pending != nil {
		a.pending.at = a.s.now
		heap.Fix(&a.s.queue, a.pending.index)
	}
}

// CancelAt cancels the actor at t.
func (a *Actor) CancelAt(t time.Time) { a.s.push(t, a.Cancel) }

type reply struct {
	v   any
	err error
}

type msg struct {
	a    *Actor
	c    *Call // nil when the actor finished
	err  error
	done bool
}

// await waits for the running actor to block or finish.
func (s *Scheduler) await() {
	m := <-s.msgs
	a := m.a
	if m.done {
		delete(s.actors, a.ID)
		a.done(a, m.err)
		return
	}
	c := m.c
	a.Calls++
	at := s.now.Add(c.Sleep)
	if c.Apply != nil {
		at = s.now.Add(time.Millisecond)
		if s.Latency != nil {
			at = s.now.Add(s.Latency(a, c))
		}
	}
	a.pending = s.push(at, func() { s.execute(a, c) })
}

// execute runs an actor's blocked call at its time and resumes the actor.
func (s *Scheduler) execute(a *Actor, c *Call) {
	a.pending = nil
	var r reply
	f := NoFault
	if c.Apply != nil && a.ctx.Err() == nil && s.Fault != nil {
		f = s.Fault(a, c)
	}
	switch {
	case a.ctx.Err() != nil:
		if c.Apply != nil && c.Mutates && s.rng.IntN(2) == 0 {
			s.apply(a, c) // cut short after the request left
		}
		a.Faulted = c.Apply != nil || a.Faulted
		r.err = a.ctx.Err()
	case c.Apply == nil: // a sleep
	case f == FailBefore || f == FailAfter && !c.Mutates:
		a.Faulted = true
		r.err = s.FaultError()
	case f == FailAfter:
		a.Faulted = true
		s.apply(a, c)
		r.err = s.FaultError()
	default:
		r.v, r.err = s.apply(a, c)
	}
	if s.Trace != nil {
		s.Trace(a, c, r.err)
	}
	if c.Apply != nil && s.AnswerDelay != nil {
		if d := s.AnswerDelay(a, c); d > 0 {
			a.pending = s.push(s.now.Add(d), func() {
				a.pending = nil
				if a.ctx.Err() != nil && r.err == nil {
					a.Faulted, r = true, reply{err: a.ctx.Err()}
				}
				s.answer(a, r)
			})
			return
		}
	}
	s.answer(a, r)
}

// answer resumes actor a with r and waits for it to block again.
func (s *Scheduler) answer(a *Actor, r reply) {
	a.reply <- r
	s.await()
}

func (s *Scheduler) apply(a *Actor, c *Call) (any, error) {
	s.running = a
	defer func() { s.running = nil }()
	return c.Apply()
}

// abandon releases a goroutine left blocked when a schedule is cut short.
func (a *Actor) abandon() {
	a.cancel()
	if a.pending != nil {
		go func() {
			for range a.s.msgs {
			}
		}()
		a.reply <- reply{err: context.Canceled}
	}
}

// Clock is a clock on the virtual time, off by Skew; sleeping blocks the
// actor on the timeline.
type Clock struct {
	S    *Scheduler
	Skew time.Duration
}

func (c Clock) Now() time.Time { return c.S.now.Add(c.Skew) }

// Sleep waits for d, or returns ctx's error when ctx ends first.
func (c Clock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if _, err := ActorOf(ctx).Block(&Call{What: "Sleep", Sleep: d}); err != nil {
		return err
	}
	return ctx.Err()
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

func (s *Scheduler) push(at time.Time, f func()) *item {
	s.seq++
	if at.Before(s.now) {
		at = s.now
	}
	it := &item{at: at, seq: s.seq, fire: f}
	heap.Push(&s.queue, it)
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

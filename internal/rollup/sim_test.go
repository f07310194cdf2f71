package rollup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/simsched"
	"github.com/shardcount/shardcount/internal/windows"
)

// The simulation runs Rollers against an in-memory Firestore on a virtual
// clock, under a scheduler that lets one goroutine run at a time: every
// store call and every sleep hands control back to it, and it picks what
// happens next from a seeded random source. A seed therefore replays
// exactly the same interleaving:
//
//	go test ./internal/rollup -run TestSimulation -seed 1234 -v
//
// Each schedule mixes shard writes, Eventarc deliveries that are dropped,
// duplicated, delayed, reordered and retried after an error, several
// instances with skewed clocks, transient Firestore errors (some after the
// write was applied), cancelled contexts, and reconcile runs. After it goes
// quiet, check() verifies the roll-up's promises.
var (
	seedFlag = flag.Uint64("seed", 0, "replay only this simulation seed")
	simsFlag = flag.Int("sims", 3000, "random schedules TestSimulation runs")
)

const simCadence = time.Second

// epoch is 4 s before a minute ends, so most schedules cross into the
// next minute's window.
var epoch = time.Date(2026, 1, 1, 0, 0, 56, 0, time.UTC)

// simConfig shapes one random schedule.
type simConfig struct {
	instances  int
	writes     int
	activeFor  time.Duration // writes happen in [0, activeFor)
	pDrop      float64       // a write's event is never delivered
	pDup       float64       // …or delivered twice
	pLong      float64       // a delivery is late by up to maxLong
	maxLong    time.Duration
	pFault     float64 // a store call fails (half of them after applying)
	pCancel    float64 // a delivery's context is cancelled during it
	pSlow      float64 // a store call takes 200–800 ms
	reconciles int
	skew       time.Duration // instances' clocks are off by up to this
}

func randomConfig(rng *rand.Rand) simConfig {
	return simConfig{
		instances:  1 + rng.IntN(4),
		writes:     1 + rng.IntN(60),
		activeFor:  time.Duration(1+rng.IntN(8)) * time.Second,
		pDrop:      rng.Float64() * 0.3,
		pDup:       rng.Float64() * 0.3,
		pLong:      rng.Float64() * 0.2,
		maxLong:    time.Duration(rng.IntN(5000)) * time.Millisecond,
		pFault:     rng.Float64() * 0.15,
		pCancel:    rng.Float64() * 0.1,
		pSlow:      rng.Float64() * 0.05,
		reconciles: rng.IntN(3),
		skew:       time.Duration(rng.IntN(60)) * time.Millisecond, // beyond SkewMargin too
	}
}

func TestSimulation(t *testing.T) {
	seeds := simsched.Seeds(*seedFlag, *simsFlag)
	failures := 0
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0))
		w := newWorld(rng, randomConfig(rng))
		w.tracing = *seedFlag != 0
		w.randomSchedule()
		if problems := w.run(); len(problems) > 0 {
			if w.tracing {
				t.Log("trace:\n" + strings.Join(w.trace, "\n"))
			}
			failures++
			if failures <= 5 {
				t.Errorf("seed %d (replay: go test ./internal/rollup -run TestSimulation -seed %d -v): %+v\n%s",
					seed, seed, w.cfg, strings.Join(problems, "\n"))
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d schedules failed", failures, len(seeds))
	}
	if *seedFlag != 0 {
		t.Logf("seed %d passed", *seedFlag)
	}
}

// TestNamedScenarios are the three ways the first roll-up (with its
// "follow" loop) stranded an acknowledged write. Each was checked to fail
// against it (commit 52eee45, with its sleeps moved to an injected clock
// and its Store adapted to this one); the tests pin the fixes.
func TestNamedScenarios(t *testing.T) {
	t.Run("slot holder's sum fails after claiming", func(t *testing.T) {
		// W1's roll-up runs at 1.0 s; the slot due at 2.0 s covers W2. Its
		// holder's first sum fails. Before: follow() held that slot, logged
		// the error and returned; W2's event had deferred to it.
		w := scripted()
		w.write(100*time.Millisecond, 0, 5)
		w.write(1500*time.Millisecond, 1, 7)
		w.deliver(0, 150*time.Millisecond, 0)
		w.deliver(1, 1550*time.Millisecond, 1)
		w.fault = func(_ *simsched.Actor, c *simsched.Call) simsched.Fault {
			if c.What == "Sum" && w.now().After(epoch.Add(2*time.Second)) && !w.faulted {
				w.faulted = true
				return simsched.FailBefore
			}
			return simsched.NoFault
		}
		mustPass(t, w)
	})
	t.Run("slot holder's context is cancelled", func(t *testing.T) {
		// The same, but the function instance holding the slot due at
		// 2.0 s is stopped at 1.9 s. Before: follow() returned quietly.
		w := scripted()
		w.write(100*time.Millisecond, 0, 5)
		w.write(1500*time.Millisecond, 1, 7)
		w.deliver(0, 150*time.Millisecond, 0)
		w.deliver(1, 1550*time.Millisecond, 0)
		w.at(1900*time.Millisecond, func() {
			for _, a := range w.s.Actors() {
				a.Cancel()
			}
		})
		mustPass(t, w)
	})
	t.Run("reconcile writes an older total while a slot is held", func(t *testing.T) {
		// Reconcile sums at 0.51 s (W1 only), W2 commits at 0.6 s and its
		// event defers to the holder of the slot due at 1.0 s, reconcile's
		// slow write lands at 0.71 s. Before: the holder woke, saw
		// rollup_as_of >= its own write time and returned.
		w := scripted()
		w.write(100*time.Millisecond, 0, 5)
		w.write(600*time.Millisecond, 1, 7)
		w.deliver(0, 150*time.Millisecond, 0)
		w.deliver(1, 650*time.Millisecond, 1)
		w.reconcileAt(500*time.Millisecond, 1)
		w.latency = func(a *simsched.Actor, c *simsched.Call) time.Duration {
			if a.Tag == "reconcile" && c.What == "WriteRollup" {
				return 200 * time.Millisecond
			}
			return 5 * time.Millisecond
		}
		mustPass(t, w)
	})
}

// scripted is a world with nothing random in it: two instances, no faults,
// 5 ms per store call; the test adds writes and deliveries.
func scripted() *world {
	w := newWorld(rand.New(rand.NewPCG(1, 2)), simConfig{instances: 2})
	w.latency = func(*simsched.Actor, *simsched.Call) time.Duration { return 5 * time.Millisecond }
	w.tracing = testing.Verbose()
	return w
}

func mustPass(t *testing.T, w *world) {
	t.Helper()
	if problems := w.run(); len(problems) > 0 {
		t.Fatal(strings.Join(append(problems, w.trace...), "\n"))
	}
	t.Log("trace:\n" + strings.Join(w.trace, "\n"))
	if w.doc.Count != w.total() {
		t.Fatalf("count %d, shards %d", w.doc.Count, w.total())
	}
}

// world is one simulated counter, its Firestore documents, its Eventarc and
// its function instances.
type world struct {
	rng *rand.Rand
	cfg simConfig
	s   *simsched.Scheduler
	ctx context.Context // the actors' parent: logs go nowhere

	// Firestore.
	doc       counter.Counter
	shards    map[int]int64
	commits   int64
	sumAt     []sumPoint // the true total after each shard write
	slots     map[time.Time]string
	docWrites []docWrite

	// Eventarc and the instances.
	rollers  []*Roller
	events   []simEvent // one per shard write
	quietAt  time.Time  // no faults, cancellations or new work after this
	deadline time.Time  // the schedule must be over by then

	buckets map[time.Time]int64 // minute buckets, by start

	// Liveness bookkeeping.
	lastWrite         time.Time
	lastWriteNotified bool      // a delivery of the last write's event started
	reconcileAfter    bool      // a reconcile that started after the last write succeeded
	lastStart         time.Time // the latest start of any delivery or reconcile

	// Scripted scenarios override these.
	fault   func(a *simsched.Actor, c *simsched.Call) simsched.Fault
	latency func(a *simsched.Actor, c *simsched.Call) time.Duration
	faulted bool

	problems []string
	trace    []string // with -seed: what happened, for a failing replay
	tracing  bool
}

func (w *world) tracef(format string, args ...any) {
	if w.tracing {
		w.trace = append(w.trace, fmt.Sprintf("%12s ", w.rel(w.now()))+fmt.Sprintf(format, args...))
	}
}

type sumPoint struct {
	at    time.Time
	total int64
}

type docWrite struct {
	at, asOf time.Time
	by       string
}

type simEvent struct {
	id        string
	writtenAt time.Time
	attempts  int
}

func newWorld(rng *rand.Rand, cfg simConfig) *world {
	w := &world{
		rng: rng, cfg: cfg, s: simsched.New(epoch, rng), ctx: logging.NewContext(context.Background(), quiet),
		shards: map[int]int64{}, slots: map[time.Time]string{}, buckets: map[time.Time]int64{},
	}
	w.s.Latency = func(a *simsched.Actor, c *simsched.Call) time.Duration { return w.latency(a, c) }
	w.s.Fault = func(a *simsched.Actor, c *simsched.Call) simsched.Fault { return w.fault(a, c) }
	w.s.FaultError = w.faultError
	w.s.Trace = func(a *simsched.Actor, c *simsched.Call, err error) {
		w.tracef("  actor %d (%s) %s -> %v", a.ID, a.Tag, c.What, err)
	}
	w.doc = counter.Counter{ID: "c", NumShards: 10, AsOf: epoch, Version: epoch}
	w.docWrites = []docWrite{{at: epoch, asOf: epoch, by: "create"}}
	for range cfg.instances {
		skew := time.Duration(0)
		if cfg.skew > 0 {
			skew = time.Duration(rng.Int64N(int64(2*cfg.skew))) - cfg.skew
		}
		w.rollers = append(w.rollers, New(&simStore{w: w}, Options{Cadence: simCadence, Clock: simsched.Clock{S: w.s, Skew: skew}}))
	}
	w.fault = w.randomFault
	w.latency = w.randomLatency
	return w
}

func (w *world) now() time.Time { return w.s.Now() }

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

// spawn runs fn as an actor of a kind ("event", "reconcile"), whose
// context may end meanwhile (its instance stops, or its function times
// out).
func (w *world) spawn(kind string, fn func(ctx context.Context) error, done func(error)) {
	a := w.s.Spawn(w.ctx, kind, fn, func(_ *simsched.Actor, err error) { done(err) })
	if w.now().Before(w.quietAt) && w.rng.Float64() < w.cfg.pCancel {
		a.CancelAt(w.now().Add(time.Duration(w.rng.IntN(3000)) * time.Millisecond))
	}
}

// randomSchedule plans the writes, their deliveries and reconcile runs.
func (w *world) randomSchedule() {
	for range w.cfg.writes {
		at := time.Duration(w.rng.Int64N(int64(w.cfg.activeFor)))
		i := w.write(at, w.rng.IntN(10), w.rng.Int64N(21)-10)
		if w.rng.Float64() < w.cfg.pDrop {
			continue
		}
		copies := 1
		if w.rng.Float64() < w.cfg.pDup {
			copies = 2
		}
		for range copies {
			delay := time.Duration(w.rng.IntN(100)) * time.Millisecond
			if w.rng.Float64() < w.cfg.pLong && w.cfg.maxLong > 0 {
				delay = time.Duration(w.rng.Int64N(int64(w.cfg.maxLong)))
			}
			w.deliver(i, at+delay, w.rng.IntN(w.cfg.instances))
		}
	}
	for range w.cfg.reconciles {
		w.reconcileAt(time.Duration(w.rng.Int64N(int64(w.cfg.activeFor+2*time.Second))), w.rng.IntN(w.cfg.instances))
	}
}

// write commits delta to shard at the given offset; it returns the write's
// number.
func (w *world) write(at time.Duration, shard int, delta int64) int {
	i := len(w.events)
	w.events = append(w.events, simEvent{id: fmt.Sprintf("event-%d", i)})
	w.at(at, func() {
		w.shards[shard] += delta
		w.commits++
		w.sumAt = append(w.sumAt, sumPoint{w.now(), w.total()})
		w.events[i].writtenAt = w.now()
		w.tracef("write %d: shard %d %+d, total %d", i, shard, delta, w.total())
		w.lastWrite = w.now()
		w.lastWriteNotified, w.reconcileAfter = false, false
	})
	return i
}

// deliver hands write i's event to an instance at the given offset.
func (w *world) deliver(i int, at time.Duration, instance int) {
	w.at(at, func() { w.startDelivery(i, instance) })
}

func (w *world) startDelivery(i, instance int) {
	ev := w.events[i]
	if ev.writtenAt.Equal(w.lastWrite) {
		w.lastWriteNotified = true
	}
	w.lastStart = w.now()
	w.events[i].attempts++
	w.tracef("deliver event-%d (written %s) to instance %d, attempt %d", i, w.rel(ev.writtenAt), instance, w.events[i].attempts)
	w.spawn("event", func(ctx context.Context) error {
		return w.rollers[instance].Include(ctx, Event{ID: ev.id, CounterID: "c", WrittenAt: ev.writtenAt})
	}, func(err error) {
		w.tracef("event-%d on instance %d returns %v", i, instance, err)
		// Eventarc delivers an event again when the receiver answers 5xx,
		// which it does for every error Settled does not accept.
		if !Settled(err) {
			retry := time.Duration(100+w.rng.IntN(1900)) * time.Millisecond
			w.s.At(w.now().Add(retry), func() { w.startDelivery(i, w.rng.IntN(len(w.rollers))) })
		}
	})
}

func (w *world) reconcileAt(at time.Duration, instance int) {
	w.at(at, func() {
		start := w.now()
		w.lastStart = w.now()
		w.tracef("reconcile on instance %d", instance)
		w.spawn("reconcile", func(ctx context.Context) error {
			_, err := w.rollers[instance].Reconcile(ctx, "c")
			return err
		}, func(err error) {
			w.tracef("reconcile returns %v", err)
			if err == nil && !start.Before(w.lastWrite) {
				w.reconcileAfter = true // a failed run is not retried: the next one heals
			}
		})
	})
}

func (w *world) at(offset time.Duration, f func()) { w.s.At(epoch.Add(offset), f) }

func (w *world) total() int64 {
	var t int64
	for _, v := range w.shards {
		t += v
	}
	return t
}

// run plays the schedule until nothing is left to happen, then checks.
func (w *world) run() []string {
	w.quietAt = w.s.Latest().Add(time.Second)
	w.deadline = w.quietAt.Add(10 * time.Minute)
	if !w.s.Run(w.deadline) {
		w.problems = append(w.problems, fmt.Sprintf("still busy %s after the last planned work", w.deadline.Sub(w.quietAt)))
	}
	w.check()
	return w.problems
}

// check verifies the promises once the schedule is quiet.
func (w *world) check() {
	// The windows: every roll-up's change went to one minute, once, so
	// the minutes sum to the stored total, and a minute holds exactly what
	// changed between the roll-ups around it.
	var inBuckets int64
	for _, n := range w.buckets {
		inBuckets += n
	}
	if inBuckets != w.doc.Count {
		w.problems = append(w.problems, fmt.Sprintf("the minute buckets sum to %d, the counter holds %d", inBuckets, w.doc.Count))
	}
	for start, n := range w.buckets {
		// The attribution rule: a minute holds what was counted after the
		// last roll-up read before it, up to the last one read in it.
		var before, in time.Time
		for _, dw := range w.docWrites {
			switch {
			case dw.asOf.Before(start):
				before = laterOf(before, dw.asOf)
			case dw.asOf.Before(start.Add(time.Minute)):
				in = laterOf(in, dw.asOf)
			}
		}
		if want := w.totalAt(in) - w.totalAt(before); !in.IsZero() && n != want {
			w.problems = append(w.problems, fmt.Sprintf("the minute at %s holds %d, what was counted from %s to %s is %d",
				w.rel(start), n, w.rel(before), w.rel(in), want))
		}
	}
	if !w.lastWriteNotified && !w.reconcileAfter {
		return // every event of the last write was lost: reconcile's job
	}
	if w.doc.Count != w.total() {
		w.problems = append(w.problems, fmt.Sprintf("stranded: the counter holds %d (as of %s), the shards %d; last write at %s",
			w.doc.Count, w.rel(w.doc.AsOf), w.total(), w.rel(w.lastWrite)))
		return
	}
	// Exact within two cadences of the last work that could make it so.
	ref := laterOf(w.lastWrite, w.lastStart)
	for _, dw := range w.docWrites {
		if !dw.asOf.Before(w.lastWrite) {
			if late := dw.at.Sub(ref); late > 2*simCadence+2*time.Second {
				w.problems = append(w.problems, fmt.Sprintf("exact only %s after the last delivery (at %s)", late, w.rel(dw.at)))
			}
			return
		}
	}
}

func (w *world) rel(t time.Time) string { return t.Sub(epoch).String() }

// simStore is Firestore's semantics for one counter: update-time
// preconditions, create-if-absent, read times.
type simStore struct{ w *world }

var errSimFault = errors.New("simulated Firestore fault")

// call blocks the actor on a store call, which apply runs on the world.
func (s *simStore) call(ctx context.Context, what string, mutates bool, apply func(w *world) any) (any, error) {
	return simsched.ActorOf(ctx).Block(&simsched.Call{What: what, Mutates: mutates, Apply: func() (any, error) { return apply(s.w), nil }})
}

func (s *simStore) Live(ctx context.Context, id string) (counter.Counter, error) {
	r, err := s.call(ctx, "Read", false, func(w *world) any { return w.doc })
	if err != nil {
		return counter.Counter{}, err
	}
	return r.(counter.Counter), nil
}

func (s *simStore) Sums(ctx context.Context, c counter.Counter, _ time.Time) (counter.Sums, time.Time, error) {
	r, err := s.call(ctx, "Sum", false, func(w *world) any { return sumResult{w.total(), w.now()} })
	if err != nil {
		return counter.Sums{}, time.Time{}, err
	}
	sr := r.(sumResult)
	return counter.Sums{Count: sr.total}, sr.at, nil
}

type sumResult struct {
	total int64
	at    time.Time
}

func (s *simStore) Activity(ctx context.Context, id string) (int64, int64, error) {
	r, err := s.call(ctx, "Activity", false, func(w *world) any { return w.commits })
	if err != nil {
		return 0, 0, err
	}
	return r.(int64), 0, nil
}

func (s *simStore) Audit(context.Context, counter.Counter, time.Time) (counter.Sums, error) {
	return counter.Sums{}, nil
}

func (s *simStore) NameMemberKinds(context.Context, counter.Counter, int) (bool, error) {
	return true, nil
}

func (s *simStore) WriteRollup(ctx context.Context, ru counter.Rollup) (time.Time, bool, error) {
	kind := simsched.ActorOf(ctx).Tag
	c := ru.Next
	r, err := s.call(ctx, "WriteRollup", true, func(w *world) any {
		if !c.Version.Equal(w.doc.Version) {
			return writeResult{}
		}
		prev := w.doc
		if ru.Change != c.Count-prev.Count {
			w.problems = append(w.problems, fmt.Sprintf("%s: change %d written with a count going from %d to %d", w.rel(w.now()), ru.Change, prev.Count, c.Count))
		}
		// The windows, in the same commit: the change goes to the minute
		// holding the roll-up's read time.
		w.buckets[windows.UTC.Start(windows.Minute, c.AsOf)] += ru.Change
		switch {
		case c.AsOf.Before(prev.AsOf):
			w.problems = append(w.problems, fmt.Sprintf("%s: rollup_as_of went back from %s to %s", w.rel(w.now()), w.rel(prev.AsOf), w.rel(c.AsOf)))
		case c.Count != w.totalAt(c.AsOf):
			w.problems = append(w.problems, fmt.Sprintf("%s: stored %d as of %s, the shards held %d then", w.rel(w.now()), c.Count, w.rel(c.AsOf), w.totalAt(c.AsOf)))
		case kind != "reconcile" && w.now().Sub(prev.Version) < simCadence:
			w.problems = append(w.problems, fmt.Sprintf("%s: counter written %s after its last write, less than the cadence", w.rel(w.now()), w.now().Sub(prev.Version)))
		}
		next := prev
		next.Count, next.AsOf, next.Sums, next.WriteRate, next.Version = c.Count, c.AsOf, c.Sums, c.WriteRate, w.now()
		w.doc = next
		w.docWrites = append(w.docWrites, docWrite{at: w.now(), asOf: c.AsOf, by: kind.(string)})
		return writeResult{w.now(), true}
	})
	if err != nil {
		return time.Time{}, false, err
	}
	wr := r.(writeResult)
	return wr.version, wr.ok, nil
}

type writeResult struct {
	version time.Time
	ok      bool
}

func (w *world) totalAt(t time.Time) int64 {
	var total int64
	for _, p := range w.sumAt {
		if p.at.After(t) {
			break
		}
		total = p.total
	}
	return total
}

func (s *simStore) ClaimSlot(ctx context.Context, id string, due time.Time, holder string) (string, error) {
	r, err := s.call(ctx, "ClaimSlot", true, func(w *world) any {
		if h, ok := w.slots[due]; ok {
			return h
		}
		w.slots[due] = holder
		return holder
	})
	if err != nil {
		return "", err
	}
	return r.(string), nil
}

// ReleaseSlot: the simulated counter is never gone, so no holder
// releases its slot.
func (s *simStore) ReleaseSlot(context.Context, string, time.Time) error { return nil }

func (s *simStore) MergeShards(context.Context, string, int, int) (int, error) { return 0, nil }

// Purge: the simulated counter is never deleted.
func (s *simStore) Purge(context.Context, string) (bool, error) { return false, nil }

func (w *world) randomFault(*simsched.Actor, *simsched.Call) simsched.Fault {
	if !w.now().Before(w.quietAt) || w.rng.Float64() >= w.cfg.pFault {
		return simsched.NoFault
	}
	if w.rng.IntN(2) == 0 {
		return simsched.FailBefore
	}
	return simsched.FailAfter
}

// faultError is a failed store call's error, of any class the real store
// returns: transient (UNAVAILABLE), a context's deadline, and the ones a
// retry may or may not fix (a refused credential, a precondition that kept
// failing, an unclassified error), which the receiver must not mistake for
// done.
func (w *world) faultError() error {
	switch w.rng.IntN(5) {
	case 0:
		return errs.Retryable(errSimFault, time.Second, "simulated")
	case 1:
		return fmt.Errorf("simulated: %w", context.DeadlineExceeded)
	case 2:
		return fmt.Errorf("firestoredb: simulated PermissionDenied: %w", errSimFault)
	case 3:
		return errs.Wrap(errs.FailedPrecondition, errSimFault, "simulated: the merge gave up")
	}
	return errs.Wrap(errs.Internal, errSimFault, "simulated")
}

func (w *world) randomLatency(*simsched.Actor, *simsched.Call) time.Duration {
	if w.rng.Float64() < w.cfg.pSlow {
		return time.Duration(200+w.rng.IntN(600)) * time.Millisecond
	}
	return time.Duration(1+w.rng.IntN(40)) * time.Millisecond
}

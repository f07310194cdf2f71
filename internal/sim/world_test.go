package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/activity"
	svcconfig "github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/rollup"
	"github.com/shardcount/shardcount/internal/simsched"
	"github.com/shardcount/shardcount/internal/windows"
)

const project = "demo-sim"

var root = "projects/" + project + "/databases/(default)/documents/"

// The service's settings in the simulation: short enough that deleted ids
// come back within a schedule.
const (
	cacheFor   = 3 * time.Second // SHARD_COUNT_CACHE
	deadline   = 3 * time.Second // FIRESTORE_DEADLINE: longer than lateWrites' second of slack, as deployed (10 s)
	lateWrites = cacheFor + deadline + time.Second
	cadence    = time.Second // ROLLUP_CADENCE
	maxBatch   = 8           // GROUP_COMMIT_MAX_BATCH
)

// settings are the service's settings derived from those above: how
// often an instance marks a counter active, and how long after its
// marker reconcile visits it.
var settings = svcconfig.Config{RollupCadence: cadence, FirestoreDeadline: deadline}

// kinds are the simulated app's kinds of counters.
var kinds = counter.Kinds{"likes": {Name: "likes", Unique: true, NumShards: 3}, "views": {Name: "views", NumShards: 2}}

// epoch is 4 s before a minute ends, so schedules cross into the next
// minute's buckets.
var epoch = time.Date(2026, 1, 1, 0, 0, 56, 0, time.UTC)

// config shapes one random schedule.
type config struct {
	instances  int
	counters   int
	ops        int
	activeFor  time.Duration
	pFault     float64 // a Firestore call fails (half of them after applying)
	pCancel    float64 // an actor's context ends during it
	pSlow      float64 // a call takes 200–800 ms
	pLate      float64 // a call's answer comes back up to 2 s after it applied
	pDrop      float64 // a write's event is never delivered
	pDup       float64 // …or delivered twice
	pLong      float64 // a delivery is late by up to 3 s
	lifecycle  bool    // resets, reshards, deletions and re-creations
	nearBound  bool    // resets to values near ±(2^53 − 1)
	contention bool    // one user's likes through every instance at once
	resetStorm bool    // ten resets of one counter at once
	kinds      bool    // counters of kinds too, created by their first use
	skew       time.Duration
}

func randomConfig(r *rand.Rand) config {
	return config{
		instances:  1 + r.IntN(3),
		counters:   1 + r.IntN(3),
		ops:        10 + r.IntN(50),
		activeFor:  time.Duration(2+r.IntN(10)) * time.Second,
		pFault:     r.Float64() * 0.1,
		pCancel:    r.Float64() * 0.05,
		pSlow:      r.Float64() * 0.05,
		pLate:      r.Float64() * 0.05,
		pDrop:      r.Float64() * 0.2,
		pDup:       r.Float64() * 0.2,
		pLong:      r.Float64() * 0.1,
		lifecycle:  r.IntN(2) == 0,
		nearBound:  r.IntN(4) == 0,
		contention: r.IntN(4) == 0,
		resetStorm: r.IntN(4) == 0,
		kinds:      r.IntN(2) == 0,
		skew:       time.Duration(r.IntN(40)) * time.Millisecond,
	}
}

// instance is one function instance: its own store (caches), roll-up and
// group commit queues, on its own clock.
type instance struct {
	n      int
	clock  simsched.Clock
	store  *firestoredb.Store
	roller *rollup.Roller
	queued map[string][]*op // increments waiting for their counter's flush
	busy   map[string]bool  // a flush of the counter is in flight
}

// op is one operation of the schedule and what became of it.
type op struct {
	n           int
	kind        string
	counter     string
	inst        int
	incarnation int // of the counter when the operation started
	// firstUse: an increment whose request found its kind's counter
	// absent, counted in whichever counter of the id its commit met.
	firstUse bool
	// committedTo is the incarnation a flush's last commit wrote to.
	committedTo int
	delta       int64
	user, key   string
	attempt     int
	start, end  time.Time
	done        bool
	err         error
	result      firestoredb.IncrementResult
	asOf        time.Time   // a reset's or a strong read's read time
	value       int64       // a reset's target, a strong read's answer
	commits     []time.Time // the commits made on its behalf
	onTombstone bool        // a reconcile that began on a deleted counter
	batch       []*op       // a flush's increments
	toggle      bool        // on a unique counter, a like or an unlike at random
	faulted     bool        // a fault was injected into one of its calls
}

func (o *op) String() string {
	return fmt.Sprintf("op %d %s %s#%d on %d (delta %d user %q key %q attempt %d)", o.n, o.kind, o.counter, o.incarnation, o.inst, o.delta, o.user, o.key, o.attempt)
}

// commitRec is one commit of the model, by whom.
type commitRec struct {
	at      time.Time
	by      *op
	changes []fsmodel.Change
}

type world struct {
	rng *rand.Rand
	cfg config
	s   *simsched.Scheduler
	ctx context.Context // the actors' parent: logs go nowhere

	model     *fsmodel.Model
	instances []*instance

	quietAt time.Time // no faults, cancellations or new work after this
	endAt   time.Time // the schedule must be over by then

	counters    []string
	incarnation map[string]int
	createdAt   map[string][]time.Time // each incarnation's creation
	wasReset    map[string]bool        // "id#incarnation": a reset committed to it
	sweepCursor activity.Cursor        // where the scheduled reconcile runs stand
	dropped     map[string]time.Time   // when a counter's tombstone was last dropped
	ops         []*op
	commits     []commitRec
	events      int

	// latencyOf, when set, replaces the random latencies (scripted
	// scenarios): how long actor a's call (what) takes.
	latencyOf func(a *simsched.Actor, what string) time.Duration
	// answerDelayOf, when set, replaces the random answer delays.
	answerDelayOf func(a *simsched.Actor, what string) time.Duration

	problems []string
	trace    []string
	tracing  bool
}

func newWorld(r *rand.Rand, cfg config) *world {
	w := &world{rng: r, cfg: cfg, s: simsched.New(epoch, r), ctx: logging.NewContext(context.Background(), quiet),
		incarnation: map[string]int{}, createdAt: map[string][]time.Time{}, wasReset: map[string]bool{}, dropped: map[string]time.Time{}}
	w.s.Latency, w.s.Fault, w.s.FaultError, w.s.AnswerDelay = w.latency, w.fault, unavailable, w.answerDelay
	w.s.Trace = func(a *simsched.Actor, c *simsched.Call, err error) {
		w.tracef("  actor %d (%s) %s -> %v", a.ID, opOf(a).kind, c.What, err)
	}
	w.model = fsmodel.New(w.now)
	w.model.OnCommit = w.onCommit
	for i := range cfg.instances {
		skew := time.Duration(0)
		if cfg.skew > 0 {
			skew = time.Duration(r.Int64N(int64(2*cfg.skew))) - cfg.skew
		}
		c := simsched.Clock{S: w.s, Skew: skew}
		db, err := firestoredb.OnAPI(schedAPI{w.model}, project, firestoredb.DefaultDatabase)
		if err != nil {
			panic(err)
		}
		store := firestoredb.NewStore(db, firestoredb.Options{ShardCountCache: cacheFor, Windows: windows.DefaultRetention,
			Now: c.Now, IntN: w.rng.IntN, Kinds: kinds, ActivityEvery: settings.ActivityEvery(), ActivityShards: 3})
		w.instances = append(w.instances, &instance{n: i, clock: c, store: store,
			roller: rollup.New(store.Rollups, rollup.Options{Cadence: cadence, Clock: c}),
			queued: map[string][]*op{}, busy: map[string]bool{}})
	}
	for i := range cfg.counters {
		w.counters = append(w.counters, "c"+strconv.Itoa(i))
	}
	if cfg.kinds {
		// Counters of kinds, which their first use creates.
		w.counters = append(w.counters, "likes:p"+strconv.Itoa(r.IntN(100)), "views:p"+strconv.Itoa(r.IntN(100)))
	}
	return w
}

func (w *world) now() time.Time { return w.s.Now() }

func (w *world) noisy() bool { return w.now().Before(w.quietAt) }

func (w *world) rel(t time.Time) string { return t.Sub(epoch).String() }

func (w *world) tracef(format string, args ...any) {
	if w.tracing {
		w.trace = append(w.trace, fmt.Sprintf("%12s ", w.rel(w.now()))+fmt.Sprintf(format, args...))
	}
}

func (w *world) problem(format string, args ...any) {
	p := fmt.Sprintf("%s: ", w.rel(w.now())) + fmt.Sprintf(format, args...)
	w.problems = append(w.problems, p)
	w.tracef("PROBLEM %s", p)
}

// latency is how long a Firestore call of an actor takes.
func (w *world) latency(a *simsched.Actor, c *simsched.Call) time.Duration {
	if w.latencyOf != nil {
		return w.latencyOf(a, c.What)
	}
	if w.noisy() && w.rng.Float64() < w.cfg.pSlow {
		return time.Duration(200+w.rng.IntN(600)) * time.Millisecond
	}
	if w.cfg.contention && opOf(a).inst == 0 && len(w.instances) > 1 {
		// A far instance: its commits lose races to the others'.
		return time.Duration(30+w.rng.IntN(50)) * time.Millisecond
	}
	return time.Duration(1+w.rng.IntN(20)) * time.Millisecond
}

// answerDelay is how long a call's answer takes to come back after it
// ran: within the deadline with the latency (at most 800 ms), as a
// Firestore answer does.
func (w *world) answerDelay(a *simsched.Actor, c *simsched.Call) time.Duration {
	if w.answerDelayOf != nil {
		return w.answerDelayOf(a, c.What)
	}
	if !w.noisy() || w.rng.Float64() >= w.cfg.pLate {
		return 0
	}
	return time.Duration(w.rng.IntN(2000)) * time.Millisecond
}

// fault says whether a call now fails, half of the failures after it
// applied.
func (w *world) fault(*simsched.Actor, *simsched.Call) simsched.Fault {
	if !w.noisy() || w.rng.Float64() >= w.cfg.pFault {
		return simsched.NoFault
	}
	if w.rng.IntN(2) == 0 {
		return simsched.FailBefore
	}
	return simsched.FailAfter
}

// at runs f at t on the timeline.
func (w *world) at(t time.Time, f func()) { w.s.At(t, f) }

// run plays the schedule to its end and checks the invariants at
// quiescence; it returns the problems found.
func (w *world) run() []string {
	if !w.s.Run(w.endAt) {
		w.problem("the schedule did not end by %s: %d actors still running", w.rel(w.endAt), len(w.s.Actors()))
		return w.problems
	}
	w.checkQuiescence()
	return w.problems
}

// spawn runs fn as an actor for o; an actor's context may end meanwhile
// (its instance stops, its request times out).
func (w *world) spawn(o *op, fn func(ctx context.Context) error, done func(error)) *simsched.Actor {
	a := w.s.Spawn(w.ctx, o, fn, func(a *simsched.Actor, err error) {
		o.faulted = o.faulted || a.Faulted
		done(err)
	})
	if w.noisy() && w.rng.Float64() < w.cfg.pCancel {
		a.CancelAt(w.now().Add(time.Duration(w.rng.IntN(2000)) * time.Millisecond))
	}
	return a
}

func opOf(a *simsched.Actor) *op { return a.Tag.(*op) }

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

// counterOf splits a document name into its counter, collection and id
// ("", "", "" when it is not under a counter).
func counterOf(name string) (id, collection, doc string) {
	rest, ok := strings.CutPrefix(name, root+firestoredb.CountersCollection+"/")
	if !ok {
		return "", "", ""
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		return parts[0], "", ""
	case 3:
		return parts[0], parts[1], parts[2]
	}
	return parts[0], "?", ""
}

func field(d *pb.Document, f string) *pb.Value { return d.GetFields()[f] }

func isLive(d *pb.Document) bool { return d != nil && field(d, "deleted_at") == nil }

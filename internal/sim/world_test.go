package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/httpapi"
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

// kinds are the simulated app's kinds of counters.
// Reads count end users' reads of the app's posts: only of posts that
// exist (keys_in), which the world plants.
// Reactions are a choice kind: each user holds at most one of its
// choices per post (reactionChoices). Follows are join-only: a user
// never leaves (an erasure removes them). Watchers are distinct: each
// user's views count once, in sketches.
const kinds = `{"likes": {"unique": true, "num_shards": 3}, "views": {"num_shards": 2}, "reads": {"keys_in": "posts"},` +
	` "reactions": {"choices": ["like", "love", "haha", "wow"], "num_shards": 3}, "follows": {"unique": true, "join_only": true, "num_shards": 2},` +
	` "watchers": {"distinct": true, "num_shards": 2}}`

// config shapes one random schedule.
type config struct {
	instances  int
	counters   int
	ops        int
	activeFor  time.Duration
	pFault     float64 // a Firestore call fails (before it applies, or after: its answer lost)
	pCancel    float64 // a client gives up on its request
	pSlow      float64 // a call takes 200–800 ms
	pLate      float64 // a call applies at any time up to its deadline
	pLateReply float64 // a call's answer comes back up to 2 s after it applied
	pDrop      float64 // a write's event is never delivered
	pDup       float64 // …or delivered twice
	pLong      float64 // a delivery is late by up to a minute
	lifecycle  bool    // resets, reshards, deletions and re-creations
	nearBound  bool    // resets to values near ±(2^53 − 1)
	contention bool    // one user's likes through every instance at once
	resetStorm bool    // ten resets of one counter at once
	hot        bool    // a hot counter: a hundred increments through every instance in 1.5 s
	kinds      bool    // counters of kinds too, created by their first use
	reactions  bool    // a counter of the choice kind reactions, its users reacting from two devices each
	autoShard  bool    // AUTO_SHARDING=on, at a target hot counters pass
	audits     bool    // full audits of every counter ({"full": true}) among the work
	split      bool    // each function of an instance a server of its own, as deployed
	erasures   bool    // eraseMember of a user or two while they like and react
	crashes    int     // instances killed mid-work (mid-batch), each started again at once
	// boundary: the schedule starts 4 s before an hour ends, which is
	// midnight in its TIME_ZONE, so its rankings' windows cross both.
	boundary bool
	maxWait  time.Duration
	skew     time.Duration     // Firestore's clock against the instances'
	apart    time.Duration     // each instance's clock within this of the simulation's (0: one clock)
	env      map[string]string // settings that differ from environment()'s
}

// script is a scripted schedule's environment: how long each call takes
// (nil: 5 ms), when its answer comes back after it applied, the fault it
// meets before applying or once applied, and the events lost.
type script struct {
	latency func(c *call) time.Duration
	answer  func(c *call) time.Duration
	fault   func(c *call) codes.Code
	// faultAfter is the fault a mutating call's answer meets once it
	// applied (OK: none): the write is in, the caller hears it failed.
	faultAfter func(c *call) codes.Code
	lose       func(name string) bool          // the event of a write of this document
	delay      func(name string) time.Duration // how late that event comes (nil: a few ms)
	to         func(name string) int           // the instance it is delivered to (nil: any)
}

func randomConfig(r *rand.Rand) config {
	c := config{
		instances:  1 + r.IntN(3),
		counters:   1 + r.IntN(3),
		ops:        10 + r.IntN(50),
		activeFor:  time.Duration(2+r.IntN(10)) * time.Second,
		pFault:     r.Float64() * 0.1,
		pCancel:    r.Float64() * 0.05,
		pSlow:      r.Float64() * 0.05,
		pLate:      r.Float64() * 0.05,
		pLateReply: r.Float64() * 0.05,
		pDrop:      r.Float64() * 0.2,
		pDup:       r.Float64() * 0.2,
		pLong:      r.Float64() * 0.1,
		lifecycle:  r.IntN(2) == 0,
		nearBound:  r.IntN(4) == 0,
		contention: r.IntN(4) == 0,
		resetStorm: r.IntN(4) == 0,
		hot:        r.IntN(3) == 0,
		kinds:      r.IntN(2) == 0,
		reactions:  r.IntN(4) > 0,
		autoShard:  r.IntN(3) == 0,
		audits:     r.IntN(3) == 0,
		maxWait:    time.Duration(r.IntN(3)) * time.Millisecond,
		skew:       time.Duration(r.IntN(80)-40) * time.Millisecond,
		apart:      time.Duration(r.IntN(2)*100) * time.Millisecond,
		boundary:   r.IntN(3) == 0,
		erasures:   r.IntN(3) == 0,
		split:      r.IntN(2) == 0,
	}
	if r.IntN(3) == 0 {
		c.crashes = 1 + r.IntN(2)
	}
	c.env = map[string]string{
		// Settings varied between schedules: a batch of one op to one
		// past a flush's bound; one activity shard, or many.
		"GROUP_COMMIT_MAX_BATCH": strconv.Itoa([]int{1, 3, maxBatch, 50}[r.IntN(4)]),
		"ACTIVITY_SHARDS":        strconv.Itoa([]int{1, 3, 16}[r.IntN(3)]),
	}
	if c.boundary {
		c.env["TIME_ZONE"] = "Etc/GMT+1" // midnight at 01:00 UTC
	}
	return c
}

// world is one schedule: the instances of the service, the model of
// Firestore they share, the driver, what was asked and answered.
type world struct {
	rng *rand.Rand
	cfg config
	d   *driver
	cal windows.Calendar // of the instances' TIME_ZONE

	model     *fsmodel.Model
	instances []*instance
	epoch     time.Time // the schedule's start (the bubble's clock starts in 2000)

	quietAt time.Time // no faults, cancellations or new work after this
	endAt   time.Time // the schedule must be over by then

	counters []string
	keys     map[string][]*op // keyed increments of plain counters by an admin, by counter: keys to use again
	taps     map[string][]*op // keyed taps of choice counters, by counter and user: keys to use again
	ops      []*op
	erasures []*erasure
	// counterReads are the reads and writes of each counter's document:
	// by which instance, when (what it may have learned of it).
	counterReads map[string][]counterRead
	// contentionFrom is when one user's likes through every instance begin.
	contentionFrom time.Time
	signedIn       map[string]time.Time // when each user's ID token was issued
	commits        []commitRec
	events         int

	// script, when set, decides instead of the seed (scripted schedules).
	script *script

	applying  *call              // the call being applied, whose instance made the commit
	planted   map[time.Time]bool // commits written outside the functions (scripted), a base like a reset's
	nth       map[string]int     // calls made so far for each tag (scripted)
	undecided int                // cases a checker could not judge
	crashed   crashStats         // instances killed, and the answers lost with them
	choices   choiceStats        // what checkChoices judged, and how

	problems []string
	trace    []string
	tracing  bool
	mu       sync.Mutex // problems, from goroutines
}

// environment is the instances' settings.
func (w *world) environment() map[string]string {
	unlimited := "call=0:1,create=0:1,increment=0:1,read=0:1,strong=0:1,feed=0:1,history=0:1,top=0:1,list=0:1,reshard=0:1,delete=0:1,reset=0:1,record=0:1,query=0:1"
	return map[string]string{
		"GOOGLE_CLOUD_PROJECT":   project,
		"AUTH":                   "required",
		"FIRESTORE_DEADLINE":     deadline.String(),
		"SHARD_COUNT_CACHE":      cacheFor.String(),
		"FEED_CACHE":             feedCache.String(),
		"ROLLUP_CADENCE":         cadence.String(),
		"GROUP_COMMIT_MAX_BATCH": strconv.Itoa(maxBatch),
		"GROUP_COMMIT_MAX_WAIT":  w.cfg.maxWait.String(),
		"COUNTER_KINDS":          kinds,
		"ACTIVITY_SHARDS":        "3",
		"RECONCILE_BUDGET":       "1m",
		"RATE_LIMITS":            unlimited,
		"ADDRESS_RATE_LIMITS":    unlimited,
		"USER_MAX_DELTA":         "1000000000",
		"LOG_LEVEL":              "error",
		"ERASURE_CHECK":          erasureCheck.String(),
	}
}

// settings are the instances' settings: environment()'s, and the
// schedule's own.
func (w *world) settings() map[string]string {
	env := w.environment()
	if w.cfg.autoShard {
		env["AUTO_SHARDING"], env["AUTO_SHARDING_TARGET"], env["AUTO_SHARDING_INTERVAL"] = "on", "5", "1s"
	}
	for k, v := range w.cfg.env {
		env[k] = v
	}
	return env
}

func newWorld(r *rand.Rand, cfg config) *world {
	w := &world{rng: r, cfg: cfg, epoch: time.Now(), planted: map[time.Time]bool{}, nth: map[string]int{}, keys: map[string][]*op{}, taps: map[string][]*op{}, signedIn: map[string]time.Time{}, counterReads: map[string][]counterRead{}}
	w.d = newDriver(w)
	w.model = fsmodel.New(func() time.Time { return time.Now().Add(w.cfg.skew) })
	w.model.OnCommit = w.onCommit
	env := w.settings()
	w.cal = windows.UTC
	if zone, err := time.LoadLocation(env["TIME_ZONE"]); env["TIME_ZONE"] != "" && err == nil {
		w.cal = windows.Calendar{Zone: zone}
	}
	w.startInstances(env)
	for i := range cfg.counters {
		w.counters = append(w.counters, "c"+strconv.Itoa(i))
	}
	if cfg.kinds {
		// Counters of kinds, which their first use creates; reads of a
		// post of the app's, which exists (p2 does not: noPost).
		w.counters = append(w.counters, "likes:p"+strconv.Itoa(r.IntN(100)), "views:p"+strconv.Itoa(r.IntN(100)), "reads:p1",
			"follows:p"+strconv.Itoa(r.IntN(100)), "watchers:p"+strconv.Itoa(r.IntN(100)), "watchers:q"+strconv.Itoa(r.IntN(100)))
		if _, err := w.model.Commit(context.Background(), &pb.CommitRequest{Writes: []*pb.Write{{
			Operation: &pb.Write_Update{Update: &pb.Document{Name: root + "posts/p1"}}}}}); err != nil {
			panic(err)
		}
	}
	if cfg.reactions {
		// A post's reactions, which their first use creates.
		w.counters = append(w.counters, "reactions:p"+strconv.Itoa(r.IntN(100)))
	}
	return w
}

// authenticate is the simulation's token check: "Bearer sim:UID", and
// sim:admin for an admin.
func authenticate(_ context.Context, r *http.Request) (httpapi.Caller, error) {
	// sim:UID, or sim:UID@ISSUED (Unix seconds, as a token's iat).
	uid, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer sim:")
	if !ok {
		return httpapi.Caller{}, status.Error(codes.Unauthenticated, "not a simulation token")
	}
	var issued time.Time
	if uid, iat, ok := strings.Cut(uid, "@"); ok {
		s, err := strconv.ParseInt(iat, 10, 64)
		if err != nil {
			return httpapi.Caller{}, status.Error(codes.Unauthenticated, "not a simulation token")
		}
		return httpapi.Caller{UID: uid, IssuedAt: time.Unix(s, 0)}, nil
	}
	return httpapi.Caller{UID: uid, Admin: uid == "admin", IssuedAt: issued}, nil
}

func (w *world) noisy() bool { return time.Now().Before(w.quietAt) }

func (w *world) rel(t time.Time) string { return t.Sub(w.epoch).String() }

func (w *world) tracef(format string, args ...any) {
	if w.tracing {
		w.trace = append(w.trace, fmt.Sprintf("%12s ", w.rel(time.Now()))+fmt.Sprintf(format, args...))
	}
}

func (w *world) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := fmt.Sprintf("%s: ", w.rel(time.Now())) + fmt.Sprintf(format, args...)
	w.problems = append(w.problems, p)
	if w.tracing {
		w.trace = append(w.trace, "PROBLEM "+p)
	}
}

// at runs f at t on the driver's timeline.
func (w *world) at(t time.Time, f func()) { w.d.at(t, f) }

// faults a Firestore call may meet, before it applies and after (its
// answer lost: the commit stands).
var (
	faultsBefore = []codes.Code{codes.Unavailable, codes.Aborted, codes.ResourceExhausted, codes.Internal}
	faultsAfter  = []codes.Code{codes.DeadlineExceeded, codes.Unavailable, codes.Internal}
)

// plan decides a call's fate, when the driver first sees it: when it
// applies (any time up to its deadline), whether it fails before or after
// applying, and when its answer comes back.
func (w *world) plan(c *call) {
	now := time.Now()
	latency := time.Duration(1+w.rng.IntN(20)) * time.Millisecond
	var answer time.Duration
	fault, after := codes.OK, false
	switch sc := w.script; {
	case sc != nil:
		w.nth[c.tag]++
		c.nth = w.nth[c.tag]
		latency = 5 * time.Millisecond
		if sc.latency != nil {
			latency = sc.latency(c)
		}
		if sc.answer != nil {
			answer = sc.answer(c)
		}
		if sc.fault != nil {
			fault = sc.fault(c)
		}
		if sc.faultAfter != nil && c.mutates && fault == codes.OK {
			if f := sc.faultAfter(c); f != codes.OK {
				fault, after = f, true
			}
		}
	case !w.noisy():
	default:
		switch p := w.rng.Float64(); {
		case p < w.cfg.pSlow:
			latency = time.Duration(200+w.rng.IntN(600)) * time.Millisecond
		case p < w.cfg.pSlow+w.cfg.pLate:
			latency = time.Duration(w.rng.Int64N(int64(c.deadline.Sub(now)) + 1)) // up to its deadline
		}
		if w.rng.Float64() < w.cfg.pLateReply {
			answer = time.Duration(w.rng.IntN(2000)) * time.Millisecond
		}
		if w.rng.Float64() < w.cfg.pFault {
			after = c.mutates && w.rng.IntN(2) == 0
			if after {
				fault = faultsAfter[w.rng.IntN(len(faultsAfter))]
			} else {
				fault = faultsBefore[w.rng.IntN(len(faultsBefore))]
			}
		}
	}
	applyAt := now.Add(latency)
	if applyAt.After(c.deadline) {
		applyAt = c.deadline // Firestore applies nothing past the call's deadline
	}
	w.at(applyAt, func() {
		var r reply
		if fault == codes.OK || after {
			r.v, r.err = w.apply(c)
		}
		if fault != codes.OK {
			r = reply{err: status.Errorf(fault, "sim: %s", fault)}
		}
		w.tracef("  instance %d %s -> %v", c.inst, c.method, r.err)
		w.at(time.Now().Add(answer), func() { c.reply <- r })
	})
}

// apply runs a call on the model, as the instance that made it.
func (w *world) apply(c *call) (any, error) {
	w.applying = c
	defer func() { w.applying = nil }()
	if req, ok := c.req.(*pb.BatchGetDocumentsRequest); ok {
		for _, name := range req.GetDocuments() {
			if id, coll, _ := counterOf(name); id != "" && coll == "" {
				w.counterReads[id] = append(w.counterReads[id], counterRead{c.inst, time.Now()})
			}
		}
	}
	return c.apply()
}

// simAPI is Firestore as an instance reaches it: each call goes through
// the driver.
type simAPI struct {
	d    *driver
	m    *fsmodel.Model
	inst int
	gone *atomic.Bool // its instance's run crashed
}

// do is a call of this server's through the driver; none once its
// instance's run crashed (a process gone sends nothing).
func (a *simAPI) do(ctx context.Context, method string, req proto.Message, mutates bool, apply func() (any, error)) (any, error) {
	if a.gone.Load() {
		return nil, status.Error(codes.Unavailable, "the instance crashed: nothing was sent")
	}
	return a.d.do(ctx, a.inst, method, req, mutates, apply)
}

func (a *simAPI) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error) {
	v, err := a.do(ctx, "Commit", req, true, func() (any, error) { return a.m.Commit(context.Background(), req) })
	resp, _ := v.(*pb.CommitResponse)
	return resp, err
}

func (a *simAPI) BatchGetDocuments(ctx context.Context, req *pb.BatchGetDocumentsRequest) ([]*pb.BatchGetDocumentsResponse, error) {
	v, err := a.do(ctx, "BatchGet", req, false, func() (any, error) { return a.m.BatchGetDocuments(context.Background(), req) })
	resp, _ := v.([]*pb.BatchGetDocumentsResponse)
	return resp, err
}

func (a *simAPI) RunQuery(ctx context.Context, req *pb.RunQueryRequest) ([]*pb.RunQueryResponse, error) {
	v, err := a.do(ctx, "RunQuery", req, false, func() (any, error) { return a.m.RunQuery(context.Background(), req) })
	resp, _ := v.([]*pb.RunQueryResponse)
	return resp, err
}

func (a *simAPI) RunAggregationQuery(ctx context.Context, req *pb.RunAggregationQueryRequest) ([]*pb.RunAggregationQueryResponse, error) {
	v, err := a.do(ctx, "Aggregate", req, false, func() (any, error) { return a.m.RunAggregationQuery(context.Background(), req) })
	resp, _ := v.([]*pb.RunAggregationQueryResponse)
	return resp, err
}

func (a *simAPI) ListCollectionIds(ctx context.Context, req *pb.ListCollectionIdsRequest) ([]string, error) {
	v, err := a.do(ctx, "ListCollections", req, false, func() (any, error) { return a.m.ListCollectionIds(context.Background(), req) })
	resp, _ := v.([]string)
	return resp, err
}

// commitRec is one commit of the model: its time in Firestore's clock
// (at) and in the instances' (when: the skew apart), and which instance's
// call made it.
type commitRec struct {
	at, when time.Time
	inst     int
	changes  []fsmodel.Change
}

// fs is an instant of the instances' clock in Firestore's.
func (w *world) fs(t time.Time) time.Time { return t.Add(w.cfg.skew) }

func field(d *pb.Document, f string) *pb.Value { return d.GetFields()[f] }

func isLive(d *pb.Document) bool { return d != nil && field(d, "deleted_at") == nil }

// counterOf splits a document name into its counter, collection and id
// ("", "", "" when it is not under a counter).
func counterOf(name string) (id, collection, doc string) {
	rest, ok := strings.CutPrefix(name, root+"counters/")
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

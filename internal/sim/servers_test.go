package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardcount/shardcount/internal/service"
)

// The instances of the service. An instance serves every function with
// one set of caches and one group commit, as scripts/dev.sh's devserver
// does; in the schedules that split them (cfg.split), each function of an
// instance is a server of its own, as deployed, where each function is a
// Cloud Run service: a counter one function created or deleted is not in
// another's cache, and an event reaches the roll-up's own server.

// functions are the functions the simulation calls.
var functions = []string{"incrementCounter", "createCounter", "getCounter", "getCounters", "deleteCounter", "resetCounter",
	"reshardCounter", "topCounters", "eraseMember", "rollupCounter", "reconcileCounters"}

// instance is one instance: the real service, its caches and its group
// commit, on the model; or, split, one such server per function.
type instance struct {
	n       int
	servers []*service.Server // one, or one per function (in the order of functions)
	// ahead is how far its clock is ahead of the simulation's (within the
	// schedule's apart, either way): its servers share it.
	ahead time.Duration
	// gone is set when this run of the instance crashed: its servers send
	// no Firestore call more, and what they answer is lost. inflight are
	// the requests and events this run is answering; retired the servers
	// of the runs before, closed at the end.
	gone     *atomic.Bool
	inflight []*flight
	retired  []*service.Server
}

// flight is a request or an event an instance's run is answering: its
// answer lands, or the run crashes first and lost tells the caller at
// once that no answer comes.
type flight struct {
	lost   func()
	landed bool
}

// fly records a request or event the instance's run starts answering.
func (in *instance) fly(lost func()) *flight {
	f := &flight{lost: lost}
	in.inflight = append(slices.DeleteFunc(in.inflight, func(f *flight) bool { return f.landed }), f)
	return f
}

// land reports whether the answer of f reaches its caller: not when its
// run crashed before it ended (the caller heard so then).
func (f *flight) land() bool {
	if f.landed {
		return false
	}
	f.landed = true
	return true
}

// startInstances builds the instances with settings env, each server
// with randomness of its own, seeded from the schedule's.
func (w *world) startInstances(env map[string]string) {
	per := 1
	if w.cfg.split {
		per = len(functions)
	}
	for i := range w.cfg.instances {
		in := &instance{n: i}
		if w.cfg.apart > 0 {
			in.ahead = time.Duration(w.rng.Int64N(int64(2*w.cfg.apart)+1)) - w.cfg.apart
		}
		w.boot(in, per, env)
		w.instances = append(w.instances, in)
	}
}

// boot starts a run of instance in: per servers of settings env, with
// nothing in memory.
func (w *world) boot(in *instance, per int, env map[string]string) {
	in.gone, in.servers = new(atomic.Bool), nil
	for f := range per {
		api := &simAPI{d: w.d, m: w.model, inst: in.n*per + f, gone: in.gone}
		deps := w.deps(api)
		deps.Now = in.now
		in.servers = append(in.servers, service.NewWith(func(k string) string { return env[k] }, deps))
	}
}

// crash ends the run of instance n at once, as a process killed
// mid-batch: its calls already sent to Firestore apply or not as the
// driver decides, it sends none more, the answers of its requests and
// events in flight are lost, and a new run of it (its caches, budgets
// and erasure gate empty) takes the requests that follow.
func (w *world) crash(n int) {
	in := w.instances[n]
	w.tracef("instance %d crashed; it starts again", n)
	in.gone.Store(true)
	in.retired = append(in.retired, in.servers...)
	w.crashed.crashes++
	w.boot(in, len(in.servers), w.settings())
	flying := in.inflight
	in.inflight = nil
	for _, f := range flying {
		if f.land() { // answered with the crash, in the order they were sent
			w.crashed.lost++
			f.lost()
		}
	}
}

// crashStats count the crashes of a run of schedules, and the answers of
// requests and events lost with them.
type crashStats struct{ crashes, lost int }

func (s *crashStats) add(o crashStats) { s.crashes, s.lost = s.crashes+o.crashes, s.lost+o.lost }

func (s crashStats) String() string {
	return fmt.Sprintf("%d instances crashed mid-work, %d answers of requests and events lost with them", s.crashes, s.lost)
}

// now is the instance's clock.
func (in *instance) now() time.Time { return time.Now().Add(in.ahead) }

// deps are a server's dependencies: the model through the driver, the
// simulation's tokens, and randomness seeded per key, so that concurrent
// choices of one server do not depend on which goroutine asks first.
func (w *world) deps(api *simAPI) service.Deps {
	picks := map[string]uint64{}
	var mu sync.Mutex
	seed := w.rng.Uint64()
	return service.Deps{Firestore: api, Authenticate: authenticate, Logs: io.Discard,
		IntN: func(key string, n int) int {
			mu.Lock()
			picks[key]++
			k := picks[key]
			mu.Unlock()
			h := fnv.New64a()
			binary.Write(h, binary.LittleEndian, seed+k)
			h.Write([]byte(key))
			return int(h.Sum64() % uint64(n))
		}}
}

// serverOf is the number of the server of instance inst that runs fn:
// the instance's when it serves every function. A server's Firestore
// calls carry it (call.inst).
func (w *world) serverOf(inst int, fn string) int {
	if !w.cfg.split {
		return inst
	}
	return inst*len(functions) + slices.Index(functions, fn)
}

// handler is fn's handler on instance inst.
func (w *world) handler(inst int, fn string) http.Handler {
	in := w.instances[inst]
	return in.servers[w.serverOf(inst, fn)-inst*len(in.servers)].Handler(fn)
}

// close releases the instances, so the bubble's goroutines end.
func (w *world) close() {
	for _, in := range w.instances {
		for _, s := range append(in.servers, in.retired...) {
			s.Close()
		}
	}
}

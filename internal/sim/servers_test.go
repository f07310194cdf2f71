package sim

import (
	"encoding/binary"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"sync"
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
		for f := range per {
			api := &simAPI{d: w.d, m: w.model, inst: i*per + f}
			deps := w.deps(api)
			deps.Now = in.now
			in.servers = append(in.servers, service.NewWith(func(k string) string { return env[k] }, deps))
		}
		w.instances = append(w.instances, in)
	}
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
		for _, s := range in.servers {
			s.Close()
		}
	}
}

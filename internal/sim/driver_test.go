package sim

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The driver is the simulation's environment. The whole simulation runs
// in a testing/synctest bubble: every goroutine of the service (request
// handlers, group commit's drains, roll-ups sleeping a cadence, deadlines)
// runs for real on the bubble's virtual clock. The driver holds every
// Firestore call a goroutine makes, decides from the seed when it applies
// to the model (any time up to its deadline, also after its caller gave
// up), whether it fails before or after applying, and when its answer
// comes back; it also starts the world's requests and delivers its
// events, at their times.
//
// One seed replays one schedule: the driver releases one thing at a time
// (an answer, a request, an event) and waits, with synctest.Wait, until
// every goroutine is blocked again. Goroutines that run at the same time
// (one answer wakes a flush's callers; a batch request fans out per
// counter) reach the driver in any order, so it sorts what they hand it
// by content before it draws anything from the seed; and the service's
// own random choices are keyed (service.Deps.IntN), so they do not depend
// on which goroutine asks first. TestSeedsReplay checks it.

type driver struct {
	s *world

	mu       sync.Mutex
	calls    []*call      // made since the driver last looked
	finished []completion // goroutines that ended since
	poke     chan struct{}
	live     int // goroutines of the world still running (under mu)

	timeline timeline
	seq      int
}

func newDriver(w *world) *driver { return &driver{s: w, poke: make(chan struct{}, 1)} }

// call is one Firestore call, held by the driver.
type call struct {
	inst     int
	method   string
	tag      string // the request or event it is for, if its context says
	nth      int    // of the calls made for it: 1 for the first (scripted schedules)
	req      proto.Message
	order    string // what calls made at once are sorted by
	deadline time.Time
	mutates  bool
	apply    func() (any, error)
	reply    chan reply // buffered: a caller that gave up never blocks the driver
}

type reply struct {
	v   any
	err error
}

// do is a Firestore call of instance inst: the driver applies it and
// answers when it decides; the caller returns its context's error first
// if the context ends, as a gRPC client does, and the call may still
// apply.
func (d *driver) do(ctx context.Context, inst int, method string, req proto.Message, mutates bool, apply func() (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err() // never sent
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	// The request (or event) the call is made for, when its context says:
	// a group commit's flush is every request's, and its calls differ by
	// counter.
	tag, _ := ctx.Value(tagKey{}).(string)
	deadline, ok := ctx.Deadline()
	if !ok {
		d.s.problem("instance %d made a Firestore call with no deadline: %s", inst, method)
		deadline = time.Now().Add(deadline0)
	}
	c := &call{inst: inst, method: method, tag: tag, req: req, deadline: deadline, mutates: mutates, apply: apply, reply: make(chan reply, 1),
		order: fmt.Sprintf("%03d %s %s %x %d", inst, tag, method, sha256.Sum256(b), deadline.UnixNano())}
	d.mu.Lock()
	d.calls = append(d.calls, c)
	d.mu.Unlock()
	d.wake()
	select {
	case r := <-c.reply:
		return r.v, r.err
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// tagKey is the key of the tag a request's or an event's context carries.
type tagKey struct{}

// tagged is ctx tagged with what it is for.
func tagged(ctx context.Context, tag string) context.Context {
	return context.WithValue(ctx, tagKey{}, tag)
}

// deadline0 stands in for a missing deadline (a problem reported).
const deadline0 = time.Minute

func (d *driver) wake() {
	select {
	case d.poke <- struct{}{}:
	default:
	}
}

// completion is a goroutine of the world that ended: done runs in the
// driver.
type completion struct {
	seq  int
	done func()
}

// spawn runs f in a goroutine of the world; done runs in the driver once
// it ended (goroutines that end at once, in the order they were spawned).
func (d *driver) spawn(f func(), done func()) {
	d.mu.Lock()
	d.live++
	d.mu.Unlock()
	d.seq++
	seq := d.seq
	go func() {
		f()
		d.mu.Lock()
		d.live--
		d.finished = append(d.finished, completion{seq, done})
		d.mu.Unlock()
		d.wake()
	}()
}

// at runs f in the driver at t (now, if t has passed).
func (d *driver) at(t time.Time, f func()) {
	d.seq++
	if now := time.Now(); t.Before(now) {
		t = now
	}
	heap.Push(&d.timeline, &item{at: t, seq: d.seq, fire: f})
}

// absorb takes what the goroutines handed over since the driver last
// looked, in an order that does not depend on theirs: the calls sorted by
// content, then the completions in the order their goroutines started.
func (d *driver) absorb() bool {
	d.mu.Lock()
	calls, finished := d.calls, d.finished
	d.calls, d.finished = nil, nil
	d.mu.Unlock()
	slices.SortStableFunc(calls, func(a, b *call) int { return strings.Compare(a.order, b.order) })
	for _, c := range calls {
		d.s.plan(c)
	}
	slices.SortFunc(finished, func(a, b completion) int { return a.seq - b.seq })
	for _, f := range finished {
		f.done()
	}
	return len(calls) > 0 || len(finished) > 0
}

// run plays the timeline until nothing is left to happen, or until end:
// false then.
func (d *driver) run(end time.Time) bool {
	for {
		synctest.Wait()
		d.absorb()
		d.mu.Lock()
		live := d.live
		d.mu.Unlock()
		if d.timeline.Len() == 0 && live == 0 {
			return true
		}
		now := time.Now()
		if now.After(end) {
			return false
		}
		wait := end.Sub(now) + time.Second // no event: wait for a goroutine's own timer
		if d.timeline.Len() > 0 {
			wait = d.timeline[0].at.Sub(now)
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-d.poke:
			}
			t.Stop()
			continue
		}
		heap.Pop(&d.timeline).(*item).fire()
	}
}

// timeline is the driver's queue: a heap by time, ties by the order of
// insertion.
type timeline []*item

type item struct {
	at    time.Time
	seq   int
	index int
	fire  func()
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

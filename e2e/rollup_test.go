package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
)

// cadence is ROLLUP_CADENCE of the functions under test.
const cadence = time.Second

// settle is how long the scheduled reconcile leaves a counter's activity
// marker before visiting it (config.ReconcileSettle): twice the marking
// interval (10 cadences) + FIRESTORE_DEADLINE (3s) + 1 s.
const settle = 2*10*cadence + 3*time.Second + time.Second

// burst is what incrementMany observed.
type burst struct {
	sum    int64       // of the acknowledged deltas
	last   time.Time   // when the last one was acknowledged
	shards map[int]int // increments per shard used
}

// incrementMany sends n increments of random deltas (-5..15, never 0) from
// workers goroutines, at most rate per second (0: as fast as they go), and
// fails the test if any is refused.
func incrementMany(t *testing.T, id string, n, workers, rate int) burst {
	t.Helper()
	var (
		mu       sync.Mutex
		got      = burst{shards: map[int]int{}}
		failures []string
		wg       sync.WaitGroup
		jobs     = make(chan int64)
	)
	for range workers {
		wg.Go(func() {
			for delta := range jobs {
				r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"delta":%d}`, id, delta))
				mu.Lock()
				if r.Status == http.StatusOK {
					var inc incrementResp
					r.Decode(t, &inc)
					got.sum += inc.Delta
					got.shards[inc.Shard]++
					got.last = time.Now()
				} else {
					failures = append(failures, r.String())
				}
				mu.Unlock()
			}
		})
	}
	var tick <-chan time.Time
	if rate > 0 {
		ticker := time.NewTicker(time.Second / time.Duration(rate))
		defer ticker.Stop()
		tick = ticker.C
	}
	for range n {
		if tick != nil {
			<-tick
		}
		delta := rand.Int64N(20) - 5
		if delta >= 0 {
			delta++ // -5..-1, 1..15
		}
		jobs <- delta
	}
	close(jobs)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d increments failed, first: %s", len(failures), failures[0])
	}
	return got
}

// settledCounter creates a counter, increments it n times and waits for the
// roll-up to catch up; it returns the id and the total.
func settledCounter(t *testing.T, shards, n int) (string, int64) {
	t.Helper()
	id := newCounterID(t)
	createCounter(t, id, shards)
	inc := incrementMany(t, id, n, 4, 200)
	if got, _ := waitEventual(t, id, inc.sum, inc.last.Add(2*cadence)); got != inc.sum {
		t.Fatalf("eventual = %d, want %d", got, inc.sum)
	}
	return id, inc.sum
}

// waitEventual polls the eventual read until it equals want or the deadline
// passes, and returns the last count read and when it was read.
func waitEventual(t *testing.T, id string, want int64, deadline time.Time) (int64, time.Time) {
	t.Helper()
	for {
		got := getCounter(t, id, "eventual")
		if got.Count == want || time.Now().After(deadline) {
			return got.Count, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRollupConvergesAndKeepsItsCadence(t *testing.T) {
	waitForQuietEvents(t)
	id := newCounterID(t)
	createCounter(t, id, 10)
	fs := testenv.Firestore(t, project)

	// Watch every version of the counter document.
	ctx, stop := context.WithCancel(context.Background())
	var (
		versions []time.Time
		watchMu  sync.Mutex
		watched  = make(chan struct{})
	)
	go func() {
		defer close(watched)
		it := fs.Doc("counters/" + id).Snapshots(ctx)
		defer it.Stop()
		for {
			snap, err := it.Next()
			if err != nil {
				return
			}
			watchMu.Lock()
			if n := len(versions); n == 0 || !versions[n-1].Equal(snap.UpdateTime) {
				versions = append(versions, snap.UpdateTime)
			}
			watchMu.Unlock()
		}
	}()

	// Count the events the emulator delivers for this counter.
	var delivered atomic.Int64
	tapCounter(t, id, func(*triggerbridge.Delivery) bool { delivered.Add(1); return true })

	start := time.Now()
	inc := incrementMany(t, id, 3000, 32, 1000)
	sum, last := inc.sum, inc.last
	t.Logf("3000 increments in %s", last.Sub(start).Round(time.Millisecond))

	got, at := waitEventual(t, id, sum, last.Add(2*cadence))
	if got != sum {
		t.Fatalf("eventual read = %d two cadences after the last increment, want %d", got, sum)
	}
	t.Logf("roll-up lag after the last increment: %s", at.Sub(last).Round(time.Millisecond))
	if strong := getCounter(t, id, "strong"); strong.Count != sum {
		t.Errorf("strong read = %d, want %d", strong.Count, sum)
	}

	// Cadence: the counter document was written at most once per cadence.
	time.Sleep(200 * time.Millisecond)
	stop()
	<-watched
	snap, err := fs.Doc("counters/" + id).Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rollups := snap.Data()["rollups"].(int64)
	elapsed := time.Since(start)
	if max := int64(elapsed/cadence) + 1; rollups > max || rollups < 1 {
		t.Errorf("%d roll-up writes in %s, want 1..%d", rollups, elapsed.Round(time.Millisecond), max)
	}
	watchMu.Lock()
	defer watchMu.Unlock()
	for i := 1; i < len(versions); i++ {
		if gap := versions[i].Sub(versions[i-1]); gap < cadence*95/100 {
			t.Errorf("versions %d and %d of the counter are %s apart, less than the cadence", i-1, i, gap)
		}
	}
	t.Logf("%d roll-up writes, %d versions watched", rollups, len(versions))

	// The emulator delivers events one at a time (about 300/s here), so
	// they trail the burst; wait for all of them, then check nothing moved.
	// One event per shard commit, and group commit made fewer commits than
	// increments; the shards count their commits.
	commits := shardCommits(t, id)
	for deadline := time.Now().Add(time.Minute); delivered.Load() < commits && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if n := delivered.Load(); n != commits {
		t.Fatalf("%d shard events delivered, want one per commit: %d", n, commits)
	}
	t.Logf("3000 increments in %d commits", commits)
	if got := getCounter(t, id, "eventual").Count; got != sum {
		t.Errorf("after every event was handled: eventual = %d, want %d", got, sum)
	}
}

// shardCommits is the number of commits made to counter id's shards, each
// of which has an event.
func shardCommits(t *testing.T, id string) int64 {
	t.Helper()
	docs, err := testenv.Firestore(t, project).Collection("counters/" + id + "/shards").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, d := range docs {
		n += d.Data()["commits"].(int64)
	}
	return n
}

// captureEvents increments counter id n times with every shard event held
// back by the bridge, and returns the events in production form: one per
// shard commit.
func captureEvents(t *testing.T, id string, n int) ([]*triggerbridge.Delivery, int64) {
	t.Helper()
	waitForQuietEvents(t)
	var (
		mu     sync.Mutex
		events []*triggerbridge.Delivery
	)
	tapCounter(t, id, func(d *triggerbridge.Delivery) bool {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, d)
		return false
	})
	sum := incrementMany(t, id, n, 8, 500).sum
	want := int(shardCommits(t, id))
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		got := len(events)
		mu.Unlock()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("captured %d events, want one per commit: %d", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c := getCounter(t, id, "eventual").Count; c != 0 {
		t.Fatalf("eventual count = %d with every event held back, want 0", c)
	}
	return events, sum
}

// replay delivers events straight to rollupCounter, each copies times, in
// random order, 16 at a time, as Eventarc may.
func replay(t *testing.T, events []*triggerbridge.Delivery, copies int) {
	t.Helper()
	var all []*triggerbridge.Delivery
	for range copies {
		all = append(all, events...)
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, d := range all {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			status, err := bridge.Deliver(context.Background(), d)
			if err != nil || status != http.StatusNoContent {
				t.Errorf("deliver: %d %v", status, err)
			}
		})
	}
	wg.Wait()
}

func TestRollupReplayDuplicatedAndShuffledIsExact(t *testing.T) {
	id := newCounterID(t)
	createCounter(t, id, 10)
	events, sum := captureEvents(t, id, 300)

	// The captured events are what the emulator sent: creates, then updates.
	creates := 0
	for _, d := range events {
		e, err := fsevent.Decode(d.Header.Get("Content-Type"), d.Body)
		if err != nil {
			t.Fatalf("captured event does not decode: %v", err)
		}
		if e.Deleted() || e.Path() == "" {
			t.Errorf("unexpected event %+v", e)
		}
		if e.OldValue == nil {
			creates++
		}
	}
	if creates < 2 || creates > 10 {
		t.Errorf("%d create events, want one per shard used (2..10)", creates)
	}

	replay(t, events, 3)
	if got := getCounter(t, id, "eventual").Count; got != sum {
		t.Errorf("after replaying every event 3 times, shuffled: eventual = %d, want %d", got, sum)
	}
}

func TestRollupWithOneEventLostIsExact(t *testing.T) {
	id := newCounterID(t)
	createCounter(t, id, 10)
	events, sum := captureEvents(t, id, 200)
	lost := rand.IntN(len(events))
	events = append(events[:lost], events[lost+1:]...)
	replay(t, events, 3)
	if got := getCounter(t, id, "eventual").Count; got != sum {
		t.Errorf("with event %d lost: eventual = %d, want %d (a later event heals it)", lost, got, sum)
	}
}

func TestReconcileHealsALostLastEvent(t *testing.T) {
	waitForQuietEvents(t)
	id, sum := settledCounter(t, 4, 50)

	// Let the roll-up stop following the counter (one quiet cadence), then
	// lose the event of one more increment: nothing will roll it up.
	time.Sleep(2*cadence + 500*time.Millisecond)
	tapCounter(t, id, func(*triggerbridge.Delivery) bool { return false })
	r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"delta":5}`, id))
	if r.Status != http.StatusOK {
		t.Fatal(r)
	}
	time.Sleep(2*cadence + 500*time.Millisecond)
	if got := getCounter(t, id, "eventual").Count; got != sum {
		t.Fatalf("eventual = %d, want the stale %d (the event was dropped)", got, sum)
	}

	// The scheduled run ({}) finds it through the activity index: the
	// counter's marker, written by a commit at most 10 cadences before
	// the lost one, is visited once it has settled, and the visit sums
	// every write made until then.
	snap, err := testenv.Firestore(t, project).Doc("counter_activity/" + id).Get(context.Background())
	if err != nil {
		t.Fatalf("the counter's activity marker: %v", err)
	}
	marked, _ := snap.Data()["timestamp"].(time.Time)
	if marked.After(time.Now()) || time.Since(marked) > 10*cadence+5*time.Second {
		t.Fatalf("the marker says %s: want at most 10 cadences before the lost write", marked)
	}
	// As an instance under ACTIVITY_SHARDS=20 would have left it, before
	// the setting was lowered to this server's 10, which a run then saw:
	// on a shard value the runs of 10 did not read.
	fs := testenv.Firestore(t, project)
	if _, err := fs.Doc("counter_activity/"+id).Update(context.Background(), []firestore.Update{{Path: "shard", Value: "15"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Doc("shardcount/reconcile").Set(context.Background(), map[string]any{"active_shards": 20}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Mode               string
		Checked, Corrected int
		PassComplete       bool `json:"pass_complete"`
		Since              string
	}
	for deadline := marked.Add(settle + 10*time.Second); ; time.Sleep(500 * time.Millisecond) {
		r = testenv.Do(t, "POST", url("reconcileCounters"), `{}`)
		r.Decode(t, &rec)
		if r.Status != http.StatusOK || rec.Mode != "active" {
			t.Fatalf("the scheduled reconcile: %s", r)
		}
		if got := getCounter(t, id, "eventual").Count; got == sum+5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the marker, the scheduled runs have not healed it: %s", time.Since(marked), r)
		}
	}
	if healed := time.Since(marked); healed < settle-cadence {
		t.Errorf("healed %s after the marker: before it settled (%s), the run could miss later writes", healed, settle)
	}
	since, err := time.Parse(time.RFC3339Nano, rec.Since)
	if !rec.PassComplete || err != nil || since.Before(marked) {
		t.Errorf("the healing run covers every counter active up to %q, complete %v: want past the marker, %s", rec.Since, rec.PassComplete, marked)
	}

	// One counter now, by id.
	tapCounter(t, id, func(*triggerbridge.Delivery) bool { return false })
	if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"delta":2}`, id)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	r = testenv.Do(t, "POST", url("reconcileCounters"), fmt.Sprintf(`{"counter_id":%q}`, id))
	r.Decode(t, &rec)
	if r.Status != http.StatusOK || rec.Mode != "one" || rec.Checked != 1 || rec.Corrected != 1 {
		t.Fatalf("reconcileCounters of one counter: %s", r)
	}
	if got := getCounter(t, id, "eventual").Count; got != sum+7 {
		t.Errorf("after reconcile: eventual = %d, want %d", got, sum+7)
	}
	// The full audit of every counter (other tests' counters included),
	// to the end of a pass, twice: the second finds nothing to correct.
	for pass := range 2 {
		rec.PassComplete = false
		for !rec.PassComplete {
			r = testenv.Do(t, "POST", url("reconcileCounters"), `{"full": true}`)
			r.Decode(t, &rec)
			if r.Status != http.StatusOK || rec.Mode != "full" {
				t.Fatalf("the full audit: %s", r)
			}
		}
		if pass == 1 && rec.Corrected != 0 {
			t.Errorf("the second full audit corrected %d counters: %s", rec.Corrected, r)
		}
	}
	r = testenv.Do(t, "POST", url("reconcileCounters"), `{"counter_id":"nope-404"}`)
	if r.Status != http.StatusNotFound {
		t.Errorf("reconcile of an unknown counter: %s", r)
	}
}

func TestRollupFollowsADeletedShard(t *testing.T) {
	waitForQuietEvents(t)
	id, sum := settledCounter(t, 2, 40)
	fs := testenv.Firestore(t, project)
	shard := fs.Doc("counters/" + id + "/shards/0")
	snap, err := shard.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shard.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := sum - snap.Data()["count"].(int64)
	// A delete's event carries only old_value and a time cut to the
	// second, so allow one more second.
	if got, _ := waitEventual(t, id, want, time.Now().Add(3*cadence)); got != want {
		t.Errorf("after deleting shard 0: eventual = %d, want %d", got, want)
	}
}

// TestQuietCounterIsNotQueuedBehindAHotOne increments one counter as fast
// as the machine allows for 10 s while a second counter gets one increment
// a second; every increment of the second counter reaches its eventual read
// within two cadences. Before, the emulator's serial delivery queued the
// quiet counter's events behind the hot one's (10.6 s measured).
func TestQuietCounterIsNotQueuedBehindAHotOne(t *testing.T) {
	waitForQuietEvents(t)
	hot, quiet := newCounterID(t), newCounterID(t)
	createCounter(t, hot, 10)
	createCounter(t, quiet, 1)

	stop := make(chan struct{})
	hammered := make(chan int64)
	go func() {
		var wg sync.WaitGroup
		var n atomic.Int64
		for range 32 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, hot)); r.Status == http.StatusOK {
						n.Add(1)
					}
				}
			})
		}
		wg.Wait()
		hammered <- n.Load()
	}()

	var worst time.Duration
	var lags []time.Duration
	for i := 1; i <= 10; i++ {
		time.Sleep(time.Second)
		r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, quiet))
		if r.Status != http.StatusOK {
			t.Fatal(r)
		}
		acked := time.Now()
		got, at := waitEventual(t, quiet, int64(i), acked.Add(2*cadence))
		lag := at.Sub(acked)
		worst = max(worst, lag)
		lags = append(lags, lag.Round(time.Millisecond))
		if got != int64(i) {
			t.Errorf("increment %d of the quiet counter: eventual = %d two cadences later, want %d", i, got, i)
		}
	}
	close(stop)
	n := <-hammered
	t.Logf("hot counter: %d increments in 10 s; quiet counter: roll-up lags %v, worst %s", n, lags, worst.Round(time.Millisecond))
	if n < 1000 {
		t.Errorf("only %d increments on the hot counter: it was not hot", n)
	}
}

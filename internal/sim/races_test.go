package sim

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/simsched"
)

// The races a line-by-line review found in the lifecycle code, each as a
// scripted schedule that failed its invariant on the code before the fix
// (the commit that adds them says how it failed), and the fix keeps them
// passing.

// scripted is a world with nothing random in its faults: instances, one
// counter "c", every call fast (or as latency says), events delivered.
func scripted(t *testing.T, instances int) *world {
	w := newWorld(rand.New(rand.NewPCG(1, 2)), config{instances: instances, counters: 1})
	w.counters = []string{"c"}
	w.tracing = testing.Verbose()
	w.latencyOf = func(*simsched.Actor, string) time.Duration { return 5 * time.Millisecond }
	w.quietAt = epoch.Add(time.Hour) // no faults are configured anyway
	w.endAt = epoch.Add(2 * time.Hour)
	return w
}

// quiesce runs the scheduled reconcile twice after t, as the scheduled job
// does, and runs the schedule to its end.
func (w *world) quiesce(t *testing.T, after time.Time) {
	t.Helper()
	w.quietAt = after
	w.scheduledRuns(after)
	problems := w.run()
	if testing.Verbose() {
		t.Logf("trace:\n%s", strings.Join(w.trace, "\n"))
	}
	if len(problems) > 0 {
		t.Fatal(strings.Join(problems, "\n"))
	}
}

func ms(n int) time.Time { return epoch.Add(time.Duration(n) * time.Millisecond) }

// slow makes one instance's calls take d, but for each actor's first (a
// read that finds the state the race begins from); the others take 5 ms.
func (w *world) slow(inst int, d time.Duration) {
	w.latencyOf = func(a *simsched.Actor, _ string) time.Duration {
		if opOf(a).inst == inst && a.Calls > 1 {
			return d
		}
		return 5 * time.Millisecond
	}
}

func TestTwoResetsAtOnceLandOnce(t *testing.T) {
	// A counter at 100, reset to 0 by two instances at once (a client
	// retrying after a 503 does this). Both summed 100 before either
	// committed, and both added −100: −100. Ten at once left −900.
	w := scripted(t, 2)
	w.at(ms(0), func() { w.createOn(0, "c", false) })
	w.at(ms(100), func() { w.add("c", 0, 100, "") })
	w.at(ms(200), func() { w.add("c", 1, 0+1, "") }) // both instances cache the counter
	w.at(ms(300), func() { w.add("c", 1, -1, "") })
	for inst := range 2 {
		w.at(ms(500), func() { w.resetOn(inst, "c", 0) })
	}
	w.quiesce(t, ms(1000))
	if sum := w.shardSum("c", time.Time{}); sum != 0 {
		t.Errorf("after two resets to 0 the counter holds %d", sum)
	}
}

func TestAStalePurgeLeavesTheNewCounter(t *testing.T) {
	// A slow instance reads a tombstone whose id is free, and purges it:
	// for its own creation of the id, or as reconcile. Meanwhile the fast
	// instance creates the id again and counts on it. The slow purge,
	// begun on the tombstone, listed and deleted the new counter's shard.
	for name, stale := range map[string]func(w *world){
		"a creation that loses the race": func(w *world) { w.createOn(1, "c", false) },
		"reconcile":                      func(w *world) { w.reconcileOn(1, "c") },
	} {
		t.Run(name, func(t *testing.T) {
			w := scripted(t, 2)
			w.slow(1, 150*time.Millisecond)
			w.at(ms(0), func() { w.createOn(0, "c", false) })
			w.at(ms(100), func() { w.add("c", 0, 3, "") })
			w.at(ms(500), func() { w.deleteOn(0, "c") })
			reuse := ms(500).Add(lateWrites + time.Second)
			w.at(reuse, func() { stale(w) })
			w.at(reuse.Add(10*time.Millisecond), func() { w.createOn(0, "c", false) })
			var late *op
			w.at(reuse.Add(40*time.Millisecond), func() { late = w.add("c", 0, 7, "k-new") })
			w.quiesce(t, reuse.Add(2*time.Second))
			if late.err != nil || w.shardSum("c", time.Time{}) != 7 {
				t.Errorf("the new counter holds %d (its increment: %v), want 7", w.shardSum("c", time.Time{}), late.err)
			}
		})
	}
}

func TestACreationRacingTheDropIsNotRefused(t *testing.T) {
	// Reconcile drops a purged tombstone while a creation of its id,
	// begun on the tombstone, purges too: the creation's replace found the
	// tombstone gone (or moved on by the other purge) and answered
	// ALREADY_EXISTS for an id nobody held.
	w := scripted(t, 2)
	w.at(ms(0), func() { w.createOn(0, "c", false) })
	w.at(ms(100), func() { w.add("c", 0, 3, "") })
	w.at(ms(500), func() { w.deleteOn(0, "c") })
	reuse := ms(500).Add(lateWrites + time.Second)
	w.at(reuse, func() { w.reconcileOn(1, "c") })
	w.at(reuse.Add(2*time.Millisecond), func() { w.createOn(0, "c", false) })
	w.quiesce(t, reuse.Add(2*time.Second))
	if create := w.lastOf("create"); create.err != nil || !isLive(w.counterDoc("c", time.Time{})) {
		t.Errorf("the creation of a free id: %v", create.err)
	}
}

func TestTheBoundHoldsAcrossAReset(t *testing.T) {
	// Instance 1 knows the counter at 1 (it summed it for its first
	// commit); instance 0 resets it next to the bound; instance 1, within
	// its cache's lifetime, adds 10⁹ against what it knew, on a shard the
	// reset did not write: past the bound.
	w := scripted(t, 2)
	var reset *op
	w.at(ms(0), func() { w.createCounter(0, counter.Counter{ID: "c", NumShards: 10, Origin: counter.ByAdmin}) })
	w.at(ms(100), func() { w.add("c", 1, 1, "") })
	w.at(ms(300), func() {
		w.resetOn(0, "c", counter.MaxCount-counter.MaxDelta+1)
		reset = w.lastOf("reset")
	})
	for i := range 3 {
		w.at(ms(600+100*i), func() { w.add("c", 1, counter.MaxDelta, "") })
	}
	w.quiesce(t, ms(1000))
	if !errs.Is(reset.err, errs.InvalidArgument) {
		t.Errorf("a reset to %d, within the zone every increment must sum: %v, want INVALID_ARGUMENT", reset.value, reset.err)
	}
}

func TestOneUsersContentionFailsNoOtherLike(t *testing.T) {
	// Instance 0 commits likes of six users in one batch, slowly; instance
	// 1 toggles u0's and u5's likes every 20 ms, in opposite phases, so
	// whenever instance 0 reads them one of its two likes changes a member
	// that changes again before its commit. Each of instance 0's commits
	// failed its precondition, read again, and after five attempts every
	// like of the batch failed, not only u0's and u5's.
	w := scripted(t, 2)
	w.slow(0, 60*time.Millisecond)
	w.at(ms(0), func() { w.createOn(1, "c", true) })
	var batch []*op
	w.at(ms(500), func() {
		// u1's like flushes at once, alone; the others queue behind it and
		// share the next commit.
		for _, u := range append([]string{"u1", "u0"}, users[2:]...) {
			o := w.newOp("increment", "c", 0)
			o.delta, o.user, o.incarnation = 1, u, 1
			batch = append(batch, o)
			w.enqueue(o)
		}
	})
	for i := range 100 {
		for _, u := range []string{"u0", "u5"} {
			w.at(ms(400+20*i), func() {
				o := w.newOp("increment", "c", 1)
				o.delta, o.user, o.incarnation = int64(1-2*(i%2)), u, 1
				if u == "u5" {
					o.delta = -o.delta
				}
				w.enqueue(o)
			})
		}
	}
	w.quiesce(t, ms(3000))
	for _, o := range batch {
		if o.err != nil && o.user != "u0" && o.user != "u5" {
			t.Errorf("%s failed: %v", o, o.err)
		}
	}
}

func TestAStrongReadRefusesATombstone(t *testing.T) {
	// Instance 1 has the counter cached; instance 0 deletes it and purges
	// its shards; instance 1's strong read summed what was left and
	// answered it.
	w := scripted(t, 2)
	w.at(ms(0), func() { w.createOn(0, "c", false) })
	w.at(ms(100), func() { w.add("c", 0, 5, "") })
	w.at(ms(200), func() { w.strongOn(1, "c") })
	w.at(ms(500), func() { w.deleteOn(0, "c") })
	w.at(ms(700), func() { w.strongOn(1, "c") })
	w.quiesce(t, ms(1000))
	if last := w.lastOf("strong"); !errs.Is(last.err, errs.NotFound) {
		t.Errorf("a strong read of a deleted counter: %d, %v; want NOT_FOUND", last.value, last.err)
	}
}

func TestAPurgeLeavesNothingBehind(t *testing.T) {
	// A deleted counter's purge deletes its shards; each deletion is a
	// written event, whose roll-up claimed a slot under the counter: after
	// the purge that dropped the tombstone, the slot was left there for
	// good.
	w := scripted(t, 2)
	w.at(ms(0), func() { w.createOn(0, "c", false) })
	for i := range 5 {
		w.at(ms(100+50*i), func() { w.add("c", i%2, 1, "") })
	}
	w.at(ms(2000), func() { w.deleteOn(0, "c") })
	// Instance 1 still has the counter cached: a late write lands under the
	// tombstone, which reconcile purges with the tombstone itself.
	w.at(ms(2100), func() { w.add("c", 1, 1, "") })
	w.quiesce(t, ms(3000))
	// No event came after the tombstone was dropped: not even a slot is
	// left.
	if left := w.model.Documents(root+"counters/c", time.Time{}); len(left) > 0 {
		t.Errorf("%d documents left, %s the first", len(left), left[0].GetName()[len(root):])
	}
}

// lastOf is the last operation of a kind.
func (w *world) lastOf(kind string) *op {
	for i := len(w.ops) - 1; i >= 0; i-- {
		if w.ops[i].kind == kind {
			return w.ops[i]
		}
	}
	return nil
}

func TestFirstLikesOnEveryInstanceCreateTheCounterOnce(t *testing.T) {
	// A post's first likes, by six users through three instances at once,
	// on a counter of the kind likes that no one created: one commit
	// creates it, the others find it there and count on it.
	w := scripted(t, 3)
	w.counters = []string{"likes:post"}
	var likes []*op
	for i, u := range users {
		w.at(ms(100), func() {
			likes = append(likes, w.likeOnce("likes:post", i%3, u, "k-"+u))
		})
	}
	w.quiesce(t, ms(1000))
	for _, o := range likes {
		if o.err != nil || !o.result.Changed {
			t.Errorf("%s: %v (changed %v)", o, o.err, o.result.Changed)
		}
	}
	if n := len(w.createdAt["likes:post"]); n != 1 || w.shardSum("likes:post", time.Time{}) != int64(len(users)) {
		t.Errorf("%d creations, %d counted, want 1 and %d", n, w.shardSum("likes:post", time.Time{}), len(users))
	}
}

func TestALateAnswerDoesNotStretchTheCache(t *testing.T) {
	// A first use's commit applied at once but was answered 2.5 s later
	// (within the deadline). Its instance cached the new counter from the
	// answer, not from the commit, so the cache outlived what the delete's
	// purge_after allows for: an increment begun on the stale cache landed
	// after the tombstone was dropped, and the id's next first use counted
	// it (the deleted counter's +100, acknowledged with a 200).
	w := scripted(t, 2)
	w.counters = []string{"views:p1"}
	lateAnswer, slowCommit := true, false
	w.answerDelayOf = func(a *simsched.Actor, what string) time.Duration {
		if what == "Commit" && opOf(a).inst == 0 && opOf(a).kind == "flush" && lateAnswer {
			lateAnswer = false
			return 2500 * time.Millisecond
		}
		return 0
	}
	w.latencyOf = func(a *simsched.Actor, what string) time.Duration {
		if what == "Commit" && opOf(a).inst == 0 && slowCommit {
			return 2500 * time.Millisecond
		}
		return 5 * time.Millisecond
	}
	w.at(ms(100), func() { w.add("views:p1", 0, 1, "") }) // its first use creates it
	w.at(ms(300), func() { w.deleteOn(1, "views:p1") })   // purge_after: 0.3 s + lateWrites
	purgeAfter := ms(300).Add(lateWrites)
	var late *op
	w.at(purgeAfter.Add(-2300*time.Millisecond), func() { slowCommit = true; late = w.add("views:p1", 0, 100, "") })
	w.at(purgeAfter.Add(50*time.Millisecond), func() { w.reconcileOn(1, "views:p1") }) // drops the tombstone
	w.at(purgeAfter.Add(time.Second), func() { w.add("views:p1", 1, 1, "") })          // the id's next first use
	w.quiesce(t, purgeAfter.Add(3*time.Second))
	if sum := w.shardSum("views:p1", time.Time{}); sum != 1 || late.err == nil {
		t.Errorf("the new counter holds %d, want 1; the increment begun on the stale cache answered %v, want NOT_FOUND", sum, late.err)
	}
}

func TestIncrementsNearTheBoundAtOnceStayWithinIt(t *testing.T) {
	// A counter at 2^53 − 3 (MaxCount − 2) and three +1s through three
	// instances at once: each summed it, each found room for its +1, and
	// all three committed: 2^53, past what a JSON reader holds exactly.
	w := scripted(t, 3)
	w.latencyOf = func(_ *simsched.Actor, what string) time.Duration {
		if what == "Commit" {
			return 50 * time.Millisecond // a commit's round trip longer than a sum's
		}
		return 5 * time.Millisecond
	}
	w.at(ms(0), func() { w.createCounter(0, counter.Counter{ID: "c", NumShards: 4, Origin: counter.ByAdmin}) })
	// Written outside the functions: MaxCount − 2 on a shard, as a reset to
	// counter.MaxReset and 2^50 of increments would leave it.
	w.at(ms(100), func() { w.plantShard(t, "c", counter.MaxCount-2) })
	var adds []*op
	for i := range 3 {
		w.at(ms(300), func() { adds = append(adds, w.add("c", i, 1, "")) })
	}
	w.quiesce(t, ms(1000))
	if sum := w.shardSum("c", time.Time{}); sum != counter.MaxCount {
		t.Errorf("the counter holds %d, want %d", sum, int64(counter.MaxCount))
	}
	var refused int
	for _, a := range adds {
		if errs.Is(a.err, errs.OutOfRange) {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d of the three +1s refused (OUT_OF_RANGE), want 1", refused)
	}
}

func TestTheRollupFollowsACounterNearTheBound(t *testing.T) {
	// A counter near the bound, incremented every 300 ms: each commit's
	// guard, first on the counter document, moved its version, which the roll-up
	// waits a cadence past and writes on the condition of, so no roll-up
	// landed while the increments lasted (found by review).
	w := scripted(t, 2)
	w.at(ms(0), func() { w.createCounter(0, counter.Counter{ID: "c", NumShards: 4, Origin: counter.ByAdmin}) })
	w.at(ms(100), func() { w.plantShard(t, "c", counter.MaxCount-1000) })
	for i := range 30 {
		w.at(ms(300+300*i), func() { w.add("c", i%2, 1, "") })
	}
	var asOf time.Time
	end := ms(300 + 300*30)
	w.at(end, func() { asOf = w.counterDoc("c", time.Time{}).GetFields()["rollup_as_of"].GetTimestampValue().AsTime() })
	w.quiesce(t, end.Add(time.Second))
	if lag := end.Sub(asOf); lag > 2*cadence {
		t.Errorf("while the increments lasted the roll-up was %s behind (as of %s), want at most two cadences", lag, w.rel(asOf))
	}
}

// plantShard adds v to shard 0 of counter id (its first incarnation), as a
// write outside the functions would; the exactness check counts from it,
// as from a reset.
func (w *world) plantShard(t *testing.T, id string, v int64) {
	t.Helper()
	if _, err := w.model.Commit(context.Background(), &pb.CommitRequest{Writes: []*pb.Write{{
		Operation:  &pb.Write_Update{Update: &pb.Document{Name: root + "counters/" + id + "/shards/0"}},
		UpdateMask: &pb.DocumentMask{},
		UpdateTransforms: []*pb.DocumentTransform_FieldTransform{{FieldPath: "count",
			TransformType: &pb.DocumentTransform_FieldTransform_Increment{Increment: &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: v}}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	w.wasReset[id+"#1"] = true
	w.commits = append(w.commits, commitRec{at: w.now(), by: &op{kind: "reset", counter: id}})
}

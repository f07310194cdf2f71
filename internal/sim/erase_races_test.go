package sim

import (
	"testing"
	"time"
)

// Scripted schedules of erasures (erase_test.go): each failed its
// invariant on the code before its fix.

func TestAnErasureBesideTheUsersOwnLikeLeavesNoMembership(t *testing.T) {
	// u0 has liked c. A like of theirs, admitted just before their
	// erasure was recorded, its body still on its way, and the erasure's
	// −1 land in one commit batch, the erasure's first. Played in that
	// order, the two cancelled out: nothing was written, the member
	// document kept its old joined_at, the erasure's pass over what came
	// since it began skipped it, and it answered complete with u0 still a
	// member (increment.Plan plays an erasure last). The like came two
	// minutes before: the last pass goes over memberships from a minute
	// before the erasure began (erasure.Slack).
	scripted(t, 1, map[string]string{"GROUP_COMMIT_MAX_WAIT": "50ms"}, func(w *world) time.Time {
		w.at(w.ms(0), func() { w.createOn(0, "c", true) })
		w.at(w.ms(100), func() { w.like("c", 0, "u0", "", 1) })
		at := w.ms(100).Add(2 * time.Minute) // older than the erasure's slack for clocks
		w.at(at, func() {
			o := w.newOp("incrementCounter", "c", 0)
			o.user, o.delta, o.unique, o.upload = "u0", 1, true, 30*time.Millisecond
			w.sendIncrement(o)
		})
		w.at(at.Add(10*time.Millisecond), func() { w.erase("u0") })
		return at.Add(time.Second)
	})
}

func TestALikeAdmittedBeforeTheGateKnewLandsBeforeTheLastPass(t *testing.T) {
	// u0's like reaches the instance that has not looked since their
	// erasure began, within ERASURE_CHECK of its last look: it is
	// admitted, its body takes 2.5 s to come, and its commit 2.8 s of its
	// 3 s deadline, so it lands 6.2 s after the erasure began. The last
	// pass, due after a record's, a look's, a queued increment's and its
	// flush's deadlines (core.lastPassAfter, 14 s here), removes it; one
	// due a look's bound and a second after the erasure began (5 s) ran
	// before it landed and answered complete, leaving u0 a member
	// through a token of before.
	scripted(t, 2, nil, func(w *world) time.Time {
		var like *op
		w.script.latency = func(c *call) time.Duration {
			if like != nil && c.inst == like.inst && c.method == "Commit" && time.Now().After(w.ms(3000)) && time.Now().Before(w.ms(5000)) { // the like's flush
				return 2800 * time.Millisecond
			}
			return 5 * time.Millisecond
		}
		w.at(w.ms(0), func() { w.createOn(0, "c", true) })
		w.at(w.ms(100), func() { w.like("c", 0, "u1", "", 1) }) // each instance looks for erasures
		w.at(w.ms(150), func() { w.like("c", 1, "u1", "", -1) })
		w.at(w.ms(200), func() { w.erase("u0") })
		w.at(w.ms(1100), func() {
			knows := w.erasures[0].calls[0].inst // the instance the erasure began on knows of it
			like = w.newOp("incrementCounter", "c", 1-knows)
			like.user, like.delta, like.unique, like.upload = "u0", 1, true, 2500*time.Millisecond
			w.sendIncrement(like)
		})
		return w.ms(30_000)
	})
}

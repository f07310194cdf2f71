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

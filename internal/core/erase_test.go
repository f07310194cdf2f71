package core

import (
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
)

// TestAnErasuresPageTokenRoundTrips, and refuses a token of another user
// or a path that is no member document.
func TestAnErasuresPageTokenRoundTrips(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)
	e := erasure{began: at.Add(time.Minute), since: true, after: counter.Membership{Path: "counters/likes:p1/members/u1", JoinedAt: at}}
	got, err := erasureCursor(e.token(), "u1")
	if err != nil || !got.began.Equal(e.began) || got.since != e.since || got.after.Path != e.after.Path || !got.after.JoinedAt.Equal(at) {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, e)
	}
	for _, bad := range []string{
		e.token()[:len(e.token())-1] + "2", // another user
		"x y z counters/likes:p1/members/u1",
		e.began.Format(time.RFC3339Nano) + " true " + at.Format(time.RFC3339Nano) + " counters/likes:p1/shards/u1",
		e.began.Format(time.RFC3339Nano) + " true " + at.Format(time.RFC3339Nano) + " counters//members/u1",
	} {
		if _, err := erasureCursor(bad, "u1"); err == nil {
			t.Errorf("the token %q was taken", bad)
		}
	}
	if got, err := erasureCursor("", "u1"); err != nil || !got.began.IsZero() {
		t.Errorf("no token: %+v, %v", got, err)
	}
}

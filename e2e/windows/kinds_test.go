package windows

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// kindRankings: topCounters ranks one kind, in calendar windows, rolling
// ones and by total; counters of kinds come into being with their first
// increment or like (COUNTER_KINDS, set in TestMain).
func kindRankings(t *testing.T, run int64) {
	views := []string{fmt.Sprintf("views:a-%d", run), fmt.Sprintf("views:b-%d", run)}
	like := fmt.Sprintf("likes:p-%d", run)
	incrementN(t, views[0], 5)
	incrementN(t, views[1], 3)
	for _, u := range []string{"u1", "u2"} {
		uid := fmt.Sprintf("%s-%d", u, run)
		testenv.CreateUser(t, project, uid)
		token := testenv.ValidIDToken(project, uid)
		if r := do(t, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":1}`, like), "Authorization", "Bearer "+token); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	want := map[string][]string{
		"views": {views[0] + "=5", views[1] + "=3"},
		"likes": {like + "=2"},
	}
	for _, window := range []string{"hour", "day", "last_hour", "last_day", "all"} {
		for kind, ids := range want {
			var rk ranking
			ok := waitFor(t, 2*cadence+2*time.Second, func() bool {
				rk = top(t, fmt.Sprintf("window=%s&kind=%s&limit=10", window, kind))
				var got []string
				for _, c := range rk.Counters {
					got = append(got, fmt.Sprint(c.CounterID, "=", c.Count))
				}
				return slices.Equal(got, ids)
			})
			if !ok {
				t.Errorf("topCounters?window=%s&kind=%s = %s, want %v", window, kind, rk, ids)
			}
			if rolling := window == "last_hour" || window == "last_day"; rolling && (rk.Exact == nil || !*rk.Exact) {
				t.Errorf("window %s: not exact (%v)", window, rk.Exact)
			}
		}
	}
	if r := do(t, "GET", "topCounters?window=hour&kind=nope", ""); r.Status != http.StatusBadRequest {
		t.Errorf("a kind COUNTER_KINDS does not declare: %s", r)
	}
}

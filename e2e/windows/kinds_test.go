package windows

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// kindRankings: topCounters ranks one kind, in calendar windows, rolling
// ones, by total and by what is rising (all exact, so few counters are
// all candidates); counters of kinds come into being with their first
// increment or like (COUNTER_KINDS, set in TestMain). A distinct kind
// ranks by its estimate of an hour, a day and all time, and says so of
// any other window.
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
	for _, window := range []string{"hour", "day", "last_hour", "last_day", "all", "rising"} {
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
			if rolling := window == "last_hour" || window == "last_day" || window == "rising"; rolling && (rk.Exact == nil || !*rk.Exact) {
				t.Errorf("window %s: not exact (%v)", window, rk.Exact)
			}
		}
	}
	if r := do(t, "GET", "topCounters?window=hour&kind=nope", ""); r.Status != http.StatusBadRequest {
		t.Errorf("a kind COUNTER_KINDS does not declare: %s", r)
	}

	// A distinct kind: two viewers of one video (one twice), three of
	// another; an hour and a day rank them by estimate, as history tells
	// the hour's users, and so does all time.
	viewers := map[string][]string{fmt.Sprintf("viewers:v-%d", run): {"a", "b", "a"}, fmt.Sprintf("viewers:w-%d", run): {"a", "c", "d"}}
	for id, members := range viewers {
		for _, m := range members {
			if r := do(t, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"member":"%s-%d"}`, id, m, run)); r.Status != http.StatusOK {
				t.Fatal(r)
			}
		}
	}
	wantViewers := []string{fmt.Sprintf("viewers:w-%d=3", run), fmt.Sprintf("viewers:v-%d=2", run)}
	for _, window := range []string{"hour", "day", "all"} {
		var rk ranking
		if !waitFor(t, 2*cadence+2*time.Second, func() bool {
			rk = top(t, "kind=viewers&window="+window)
			var got []string
			for _, c := range rk.Counters {
				got = append(got, fmt.Sprint(c.CounterID, "=", c.Count))
			}
			return slices.Equal(got, wantViewers)
		}) {
			t.Errorf("a distinct kind in window %s: %s, want %v", window, rk, wantViewers)
		}
	}
	var hist struct {
		History []struct{ Count int64 } `json:"history"`
	}
	do(t, "GET", fmt.Sprintf("getCounter?counter_id=viewers:w-%d&history=hour", run), "").Decode(t, &hist)
	if n := len(hist.History); n == 0 || hist.History[n-1].Count != 3 {
		t.Errorf("the hour's history of viewers:w: %+v, want 3 as ranked", hist)
	}
	for _, window := range []string{"minute", "last_hour", "last_day", "rising"} {
		if r := do(t, "GET", "topCounters?kind=viewers&window="+window, ""); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "hour, day or all") {
			t.Errorf("a distinct kind in window %s: %s, want a 400 naming hour, day or all", window, r)
		}
	}
}

// choiceRankings: a choice kind's counters rank by their count of one
// choice (?choice=), in every window, after users switched: a switch moves
// one from a choice's buckets and total to another's.
func choiceRankings(t *testing.T, run int64) {
	a, b, c := fmt.Sprintf("reactions:a-%d", run), fmt.Sprintf("reactions:b-%d", run), fmt.Sprintf("reactions:c-%d", run)
	react := func(id, uid, choice string) {
		body := fmt.Sprintf(`{"counter_id":%q,"choice":%q,"member":"%s-%d"}`, id, choice, uid, run)
		if r := do(t, "POST", "incrementCounter", body); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	for _, r := range [][3]string{
		{a, "u1", "love"}, {a, "u2", "love"}, {a, "u3", "love"}, {a, "u4", "wow"},
		{b, "u1", "wow"}, {b, "u2", "wow"}, {b, "u3", "love"}, {b, "u3", "wow"}, {b, "u4", "love"},
		{c, "u1", "love"}, {c, "u2", "love"}, {c, "u2", "wow"}, {c, "u3", "sad"}, {c, "u3", ""},
	} {
		react(r[0], r[1], r[2])
	}
	want := map[string][]string{
		"":     {a + "=4", b + "=4", c + "=2"},
		"love": {a + "=3", b + "=1", c + "=1"},
		"wow":  {b + "=3", a + "=1", c + "=1"},
		"sad":  nil, // one came and went
	}
	for _, window := range []string{"hour", "day", "last_hour", "last_day", "all"} {
		for choice, ids := range want {
			query := fmt.Sprintf("window=%s&kind=reactions&limit=10", window)
			if choice != "" {
				query += "&choice=" + choice
			}
			var rk ranking
			ok := waitFor(t, 2*cadence+2*time.Second, func() bool {
				rk = top(t, query)
				var got []string
				for _, c := range rk.Counters {
					got = append(got, fmt.Sprint(c.CounterID, "=", c.Count))
				}
				return slices.Equal(got, ids)
			})
			if !ok {
				t.Errorf("topCounters?%s = %s, want %v", query, rk, ids)
			}
		}
	}
	// Unranked, a counter leaves the rankings of its choices at once.
	rank := func(ranked bool) {
		if r := do(t, "POST", "updateCounter", fmt.Sprintf(`{"counter_id":%q,"ranked":%v}`, a, ranked)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	rank(false)
	for _, window := range []string{"hour", "all"} {
		rk := top(t, fmt.Sprintf("window=%s&kind=reactions&choice=love", window))
		if len(rk.Counters) != 2 || rk.Counters[0].CounterID != b {
			t.Errorf("window %s by love, %s unranked: %s", window, a, rk)
		}
	}
	rank(true)
	var h struct {
		History []struct {
			Count  int64
			Counts map[string]int64
		}
	}
	do(t, "GET", "getCounter?history=hour&counter_id="+b, "").Decode(t, &h)
	if last := h.History[len(h.History)-1]; last.Count != 4 || last.Counts["wow"] != 3 || last.Counts["love"] != 1 {
		t.Errorf("b's history this hour: %+v, want 4 people, 3 wow and 1 love", last)
	}
	for _, q := range []string{"window=hour&kind=reactions&choice=meh", "window=hour&kind=likes&choice=love", "window=hour&choice=love"} {
		if r := do(t, "GET", "topCounters?"+q, ""); r.Status != http.StatusBadRequest {
			t.Errorf("topCounters?%s: %s, want 400", q, r)
		}
	}
}

// tiesAtTheCut: 30 counters of a kind, one increment each, tie past the
// lists' deepest (25, a list of 25 reads them that deep): a counter beyond
// them may count 1 too, but comes after the last id listed, so the first
// 25 by id are sure of their place and a list of 25 shows them, exact.
// (Before, none settled: 0 counters.)
func tiesAtTheCut(t *testing.T, run int64) {
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("ties:%d-%02d", run, i))
	}
	for _, id := range ids {
		incrementN(t, id, 1)
	}
	for _, window := range []string{"last_hour", "last_day"} {
		var rk ranking
		var got []string
		if !waitFor(t, 2*cadence+2*time.Second, func() bool {
			rk, got = top(t, "window="+window+"&kind=ties&limit=25"), nil
			for _, c := range rk.Counters {
				got = append(got, fmt.Sprint(c.CounterID, "=", c.Count))
			}
			return len(got) == 25 && rk.Exact != nil && *rk.Exact
		}) {
			t.Errorf("%s of 30 counters tied at 1: %v (exact %v), want the first 25 by id, exact", window, got, rk.Exact)
			continue
		}
		for i, id := range ids[:25] {
			if got[i] != id+"=1" {
				t.Errorf("%s of 30 counters tied at 1: %v, want the first 25 by id", window, got)
				break
			}
		}
	}
}

// Package windows checks counters' time windows end to end: the roll-up's
// minute, hour and day buckets, getCounter's history, and topCounters. It
// runs on a Firestore emulator of its own, so its rankings see only its
// own counters; the roll-up events reach this process as in production.
// Times the emulator cannot fake (an earlier hour, gaps) are buckets
// written by hand, the only way to have them without waiting for them.
package windows

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/windows"
)

// cadence is ROLLUP_CADENCE of the functions under test.
const cadence = time.Second

var base, project, emulatorAddr, triggerAddr string

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	emulatorAddr, triggerAddr = testenv.PrivateEmulatorAddrs()
	project = testenv.NewProjectID("windows")
	base = testenv.ServeFunctions(map[string]string{
		"GOOGLE_CLOUD_PROJECT":    project,
		"FIRESTORE_EMULATOR_HOST": emulatorAddr,
		"AUTH":                    "off",
		"ROLLUP_CADENCE":          cadence.String(),
		"GROUP_COMMIT_MAX_WAIT":   "2ms",
		"COUNTER_KINDS":           `{"likes": {"unique": true}, "views": {}, "reactions": {"choices": ["love", "wow", "sad"]}, "viewers": {"distinct": true}, "ties": {}}`,
		"LOG_LEVEL":               "warn",
	})
	os.Exit(m.Run())
}

func do(t *testing.T, method, fn, body string, headers ...string) testenv.Response {
	t.Helper()
	return testenv.Do(t, method, base+"/"+fn, body, headers...)
}

func create(t *testing.T, id string, unique bool) {
	t.Helper()
	if r := do(t, "POST", "createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":5,"unique":%v}`, id, unique)); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
}

// incrementN sends n increments of +1 to counter id, 8 at a time.
func incrementN(t *testing.T, id string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if r := do(t, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
				t.Errorf("increment: %s", r)
			}
		})
	}
	wg.Wait()
}

type ranking struct {
	Window   string `json:"window"`
	Start    string `json:"start"`
	Counters []struct {
		CounterID string `json:"counter_id"`
		Count     int64  `json:"count"`
	} `json:"counters"`
	Exact *bool `json:"exact"`
}

func top(t *testing.T, query string) ranking {
	t.Helper()
	r := do(t, "GET", "topCounters?"+query, "")
	if r.Status != http.StatusOK {
		t.Fatalf("topCounters?%s: %s", query, r)
	}
	var rk ranking
	r.Decode(t, &rk)
	return rk
}

func (r ranking) String() string {
	b, _ := json.Marshal(r.Counters)
	return string(b)
}

// buckets sums counter id's buckets of each granularity.
func buckets(t *testing.T, fs *firestore.Client, id string) map[string]int64 {
	t.Helper()
	docs, err := fs.Collection("counters/" + id + "/windows").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, d := range docs {
		sums[d.Data()["granularity"].(string)] += d.Data()["count"].(int64)
	}
	return sums
}

func strong(t *testing.T, id string) int64 {
	t.Helper()
	var g struct{ Count int64 }
	do(t, "GET", "getCounter?consistency=strong&counter_id="+id, "").Decode(t, &g)
	return g.Count
}

// waitFor polls until ok or the deadline.
func waitFor(t *testing.T, within time.Duration, ok func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func TestWindows(t *testing.T) {
	testenv.StartEmulator(t, emulatorAddr, "--functions_emulator="+triggerAddr)
	testenv.ServeTriggers(t, emulatorAddr, project, triggerAddr, base)
	fs := testenv.Firestore(t, project)
	run := time.Now().UnixNano()

	t.Run("topCounters ranks this hour", func(t *testing.T) {
		for attempt := 0; ; attempt++ {
			hour := windows.UTC.Start(windows.Hour, time.Now())
			ids := []string{fmt.Sprintf("a-%d-%d", run, attempt), fmt.Sprintf("b-%d-%d", run, attempt), fmt.Sprintf("c-%d-%d", run, attempt)}
			for i, id := range ids {
				create(t, id, false)
				incrementN(t, id, 30-10*i)
			}
			done := time.Now()
			if windows.UTC.Start(windows.Hour, done) != hour && attempt == 0 {
				continue // the hour turned during the increments: again, in the new one
			}
			var rk ranking
			ok := waitFor(t, 2*cadence+time.Second, func() bool {
				rk = top(t, "window=hour&limit=100")
				var got []string
				for _, c := range rk.Counters {
					if slices.Contains(ids, c.CounterID) {
						got = append(got, fmt.Sprint(c.CounterID, "=", c.Count))
					}
				}
				return slices.Equal(got, []string{ids[0] + "=30", ids[1] + "=20", ids[2] + "=10"})
			})
			if !ok {
				t.Errorf("within 2 cadences, topCounters?window=hour = %s, want %s=30, %s=20, %s=10", rk, ids[0], ids[1], ids[2])
			}
			if rk.Start != hour.Format(time.RFC3339) || rk.Window != "hour" {
				t.Errorf("window %q starting %q, want hour starting %s", rk.Window, rk.Start, hour.Format(time.RFC3339))
			}
			// Ties and order: counts descending, then ids ascending.
			for i := 1; i < len(rk.Counters); i++ {
				a, b := rk.Counters[i-1], rk.Counters[i]
				if a.Count < b.Count || a.Count == b.Count && a.CounterID > b.CounterID {
					t.Errorf("ranking out of order at %d: %s", i, rk)
				}
			}
			// A counter counted only in an earlier hour (a bucket written
			// by hand) is absent from this hour, and tops the previous one.
			old := fmt.Sprintf("old-%d", run)
			create(t, old, false)
			prev := hour.Add(-time.Hour)
			if _, err := fs.Doc("counters/"+old+"/windows/"+windows.DocID(windows.Hour, prev)).Set(context.Background(), map[string]any{
				"counter_id": old, "granularity": "hour", "start": prev, "count": int64(1_000_000), "expire_at": prev.Add(40 * 24 * time.Hour), "ranked": true}); err != nil {
				t.Fatal(err)
			}
			for _, c := range top(t, "window=hour&limit=100").Counters {
				if c.CounterID == old {
					t.Errorf("a counter of the previous hour only is in this hour's ranking: %+v", c)
				}
			}
			if p := top(t, "window=hour&previous=true&limit=3"); len(p.Counters) == 0 || p.Counters[0].CounterID != old || p.Start != prev.Format(time.RFC3339) {
				t.Errorf("previous hour: %s starting %s, want %s first", p, p.Start, old)
			}
			if all := top(t, "window=all&limit=3"); len(all.Counters) < 3 || all.Start != "" {
				t.Errorf("window=all: %+v", all)
			}
			// A deleted counter leaves both rankings at once.
			if r := do(t, "POST", "deleteCounter", fmt.Sprintf(`{"counter_id":%q}`, ids[0])); r.Status != http.StatusOK {
				t.Fatal(r)
			}
			for _, q := range []string{"window=hour&limit=100", "window=all&limit=100"} {
				for _, c := range top(t, q).Counters {
					if c.CounterID == ids[0] {
						t.Errorf("topCounters?%s still ranks the deleted %s", q, ids[0])
					}
				}
			}
			return
		}
	})

	t.Run("every bucket sums to the total, also after duplicated events", func(t *testing.T) {
		id := fmt.Sprintf("sum-%d", run)
		create(t, id, false)
		incrementN(t, id, 57)
		if r := do(t, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-7}`, id)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
		want := strong(t, id)
		if !waitFor(t, 3*cadence, func() bool {
			b := buckets(t, fs, id)
			return b["minute"] == want && b["hour"] == want && b["day"] == want
		}) {
			t.Fatalf("buckets %v, want each granularity to sum to %d", buckets(t, fs, id), want)
		}
		// Every event of the counter delivered again, twice: the roll-up is
		// as of later than each, so no bucket changes.
		before := buckets(t, fs, id)
		for range 2 {
			for shard := range 5 {
				req := testenv.ShardEvent(t, base+"/rollupCounter", project, id, shard, 1, time.Now().Add(-500*time.Millisecond))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
		}
		time.Sleep(2 * cadence)
		if after := buckets(t, fs, id); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("duplicated events changed the buckets: %v -> %v", before, after)
		}
	})

	t.Run("history has zeros for gaps", func(t *testing.T) {
		id := fmt.Sprintf("gaps-%d", run)
		create(t, id, false)
		now := windows.UTC.Start(windows.Minute, time.Now())
		for back, n := range map[int]int64{5: 3, 2: 7} {
			start := now.Add(-time.Duration(back) * time.Minute)
			if _, err := fs.Doc("counters/"+id+"/windows/"+windows.DocID(windows.Minute, start)).Set(context.Background(), map[string]any{
				"counter_id": id, "granularity": "minute", "start": start, "count": n, "expire_at": start.Add(49 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		from, to := now.Add(-6*time.Minute).Format(time.RFC3339), now.Add(-time.Minute).Format(time.RFC3339)
		r := do(t, "GET", "getCounter?history=minute&counter_id="+id+"&from="+from+"&to="+to, "")
		var g struct {
			History []struct {
				Start string
				Count int64
			}
		}
		r.Decode(t, &g)
		var counts []int64
		for i, h := range g.History {
			counts = append(counts, h.Count)
			if want := now.Add(time.Duration(i-6) * time.Minute).Format(time.RFC3339); h.Start != want {
				t.Errorf("bucket %d starts %s, want %s", i, h.Start, want)
			}
		}
		if fmt.Sprint(counts) != "[0 3 0 0 7 0]" {
			t.Errorf("history %v, want [0 3 0 0 7 0]: %s", counts, r)
		}
		var d struct{ History []any }
		do(t, "GET", "getCounter?history=day&counter_id="+id, "").Decode(t, &d)
		if len(d.History) != windows.DefaultSpan(windows.Day) {
			t.Errorf("a day history without from: %d buckets, want %d", len(d.History), windows.DefaultSpan(windows.Day))
		}
	})

	t.Run("a unique counter's buckets count joins minus leaves", func(t *testing.T) {
		id := fmt.Sprintf("likes-%d", run)
		create(t, id, true)
		var tokens []string
		for i := range 3 {
			uid := fmt.Sprintf("w-%d-%d", run, i)
			testenv.CreateUser(t, project, uid)
			tokens = append(tokens, "Bearer "+testenv.ValidIDToken(project, uid))
		}
		for _, tok := range tokens {
			if r := do(t, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id), "Authorization", tok); r.Status != http.StatusOK {
				t.Fatal(r)
			}
		}
		time.Sleep(1500 * time.Millisecond) // the joins' roll-up, then a leave in a later one
		if r := do(t, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1}`, id), "Authorization", tokens[0]); r.Status != http.StatusOK {
			t.Fatal(r)
		}
		if !waitFor(t, 3*cadence, func() bool { return buckets(t, fs, id)["hour"] == 2 }) {
			t.Errorf("buckets %v, want 3 joins - 1 leave = 2 in the hour", buckets(t, fs, id))
		}
	})

	t.Run("rankings by kind, calendar and rolling", func(t *testing.T) { kindRankings(t, run) })
	t.Run("rankings of one choice", func(t *testing.T) { choiceRankings(t, run) })
	t.Run("ties at the cut fill the list", func(t *testing.T) { tiesAtTheCut(t, run) })
}

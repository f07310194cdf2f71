package kinds

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// estimated is getCounter's answer of a distinct counter.
type estimated struct {
	Count         int64
	Estimate      bool
	StandardError float64 `json:"standard_error"`
}

// TestFiveThousandViewersTwice: 5,000 distinct members added through the
// functions, then all of them again: an estimate within 3%, which the
// second pass leaves as it was, no member document, and an eventual read
// (after reconcile) equal to the strong one.
func TestFiveThousandViewersTwice(t *testing.T) {
	id, backend := "watchers:video-"+run, admin(t)
	const members, batch = 5000, 500
	pass := func() {
		var wg sync.WaitGroup
		for from := 0; from < members; from += batch {
			wg.Go(func() {
				items := make([]string, batch)
				for i := range items {
					items[i] = fmt.Sprintf(`{"counter_id":%q,"member":"viewer-%d"}`, id, from+i)
				}
				r := call(t, backend, "POST", "incrementCounter", `{"increments":[`+strings.Join(items, ",")+`]}`)
				if r.Status != http.StatusOK || strings.Count(string(r.Body), `"status":200`) != batch {
					t.Errorf("a batch of views: %.300s", r)
				}
			})
		}
		wg.Wait()
	}
	strongRead := func() estimated {
		var e estimated
		call(t, backend, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &e)
		return e
	}
	pass()
	first := strongRead()
	if off := math.Abs(float64(first.Count-members)) / members; off > 0.03 || !first.Estimate || first.StandardError < 0.008 || first.StandardError > 0.009 {
		t.Errorf("5,000 viewers read %+v (off by %.2f%%), want an estimate within 3%% with its standard error", first, 100*off)
	}
	pass()
	if again := strongRead(); again.Count != first.Count {
		t.Errorf("the same 5,000 again: %d, want %d unchanged", again.Count, first.Count)
	}
	docs, err := testenv.Firestore(t, project).Collection("counters/" + id + "/members").Documents(context.Background()).GetAll()
	if err != nil || len(docs) != 0 {
		t.Errorf("%d member documents (%v), want none", len(docs), err)
	}
	if r := testenv.Do(t, "POST", base+"/reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatalf("reconcile: %s", r)
	}
	var eventual estimated
	call(t, backend, "GET", "getCounter", "?counter_id="+id).Decode(t, &eventual)
	if eventual.Count != first.Count || !eventual.Estimate {
		t.Errorf("eventual read after reconcile %+v, want the strong %d", eventual, first.Count)
	}
	// Today's and this hour's sketches hold the same viewers: history and
	// the last 7 days estimate them as the shards do.
	for _, g := range []string{"hour", "day"} {
		var h struct{ History []struct{ Count int64 } }
		call(t, backend, "GET", "getCounter", "?history="+g+"&counter_id="+id).Decode(t, &h)
		if n := len(h.History); n == 0 || h.History[n-1].Count != first.Count {
			t.Errorf("history=%s's last bucket: %+v, want %d", g, h.History, first.Count)
		}
	}
	var week struct {
		Count  int64
		Window string
	}
	call(t, backend, "GET", "getCounter", "?window=last_7_days&counter_id="+id).Decode(t, &week)
	if week.Count != first.Count || week.Window != "last_7_days" {
		t.Errorf("the last 7 days: %+v, want %d", week, first.Count)
	}
	for _, q := range []string{"?history=minute&counter_id=" + id, "?window=last_7_days&counter_id=likes:w-" + run, "?window=last_year&counter_id=" + id} {
		if r := call(t, backend, "GET", "getCounter", q); r.Status != http.StatusBadRequest {
			t.Errorf("getCounter%s: %s, want 400", q, r)
		}
	}
}

// TestAViewerAddsThemselvesOnce: an end user's view adds them; a view
// again changes nothing; a -1, a choice, a reset and a reshard are refused.
func TestAViewerAddsThemselvesOnce(t *testing.T) {
	id := "watchers:self-" + run
	lea, backend := user(t, "lea"), admin(t)
	for range 3 {
		if r := call(t, lea, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"idempotency_key":"v1"}`, id)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	var e estimated
	call(t, lea, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &e)
	if e.Count != 1 || !e.Estimate {
		t.Errorf("after three views of one user: %+v, want 1", e)
	}
	for _, tc := range []struct{ token, fn, body string }{
		{lea, "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1}`, id)},
		{lea, "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"choice":"love"}`, id)},
		{backend, "resetCounter", fmt.Sprintf(`{"counter_id":%q,"count":0}`, id)},
		{backend, "reshardCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":20}`, id)},
	} {
		if r := call(t, tc.token, "POST", tc.fn, tc.body); r.Status != http.StatusBadRequest {
			t.Errorf("%s %s: %s, want 400", tc.fn, tc.body, r)
		}
	}
}

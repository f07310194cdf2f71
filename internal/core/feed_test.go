package core

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/wire"
)

// page is a feed's page: every kind of every key.
func page(keys []string, kinds ...string) wire.GetCountersRequest {
	return wire.GetCountersRequest{Keys: keys, Kinds: kinds}
}

// rowsOf renders rows in a line each, for tables.
func rowsOf(rows []CounterRead) []string {
	var out []string
	for _, r := range rows {
		if r.Err != nil {
			out = append(out, r.Row.CounterID+" "+codeOf(r.Err))
			continue
		}
		line := fmt.Sprintf("%s %d", r.Row.CounterID, *r.Row.Count)
		if r.Row.Member != nil {
			line += fmt.Sprintf(" member=%v", *r.Row.Member)
		}
		if r.Row.Choice != nil {
			line += fmt.Sprintf(" choice=%q", *r.Row.Choice)
		}
		if r.Row.Counts != nil {
			line += fmt.Sprintf(" counts=%v", r.Row.Counts)
		}
		if r.Row.Estimate {
			line += " estimate"
		}
		out = append(out, line)
	}
	return out
}

// TestAPageOfCountersInOneCall: every kind of every key, in order, each
// as its mode tells the reader; a counter of a kind nobody used is 0
// (and nothing is created); a counter of no kind, and a deleted one, fail
// alone.
func TestAPageOfCountersInOneCall(t *testing.T) {
	m := newMemCore(t, map[string]string{"FEED_CACHE": "0s"})
	ctx := context.Background()
	inc := func(caller Caller, item wire.IncrementItem) {
		t.Helper()
		if _, _, err := m.IncrementCounter(ctx, caller, wire.IncrementCounterRequest{IncrementItem: item}, nil); err != nil {
			t.Fatal(err)
		}
	}
	inc(user, wire.IncrementItem{CounterID: ptr("likes:p1")})
	inc(admin, wire.IncrementItem{CounterID: ptr("likes:p1"), Member: ptr("ben")})
	inc(user, wire.IncrementItem{CounterID: ptr("reactions:p1"), Choice: ptr("love")})
	inc(user, wire.IncrementItem{CounterID: ptr("watchers:p1")})
	inc(admin, wire.IncrementItem{CounterID: ptr("views:p1"), Delta: ptr[int64](7)})
	inc(admin, wire.IncrementItem{CounterID: ptr("likes:p2"), Member: ptr("ben")})
	inc(admin, wire.IncrementItem{CounterID: ptr("views:gone")})
	if _, err := m.DeleteCounter(ctx, admin, wire.DeleteCounterRequest{CounterID: ptr("views:gone")}); err != nil {
		t.Fatal(err)
	}
	// The roll-up has not run: strong reads are the truth the rows are
	// held to once it has (the end-to-end test); here, the counts the
	// first uses wrote are 0, the member state exact.
	rows, err := m.GetCounters(ctx, user, page([]string{"p1", "p2"}, "likes", "reactions", "watchers"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"likes:p1 0 member=true", `reactions:p1 0 member=true choice="love" counts=map[like:0 love:0]`, "watchers:p1 0 estimate",
		"likes:p2 0 member=false", `reactions:p2 0 member=false choice="" counts=map[like:0 love:0]`, "watchers:p2 0 estimate",
	}
	if got := rowsOf(rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the page:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// An id too long to be one is echoed by its first 64 bytes, as an
	// error echoes what it names.
	long := "views:" + strings.Repeat("x", 60000)
	rows, err = m.GetCounters(ctx, anonymous, wire.GetCountersRequest{CounterIDs: []string{"views:gone", "nothing", "views:p9", "bad/id", long, "views:p1"}})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"views:gone NOT_FOUND", "nothing NOT_FOUND", "views:p9 0", "bad/id INVALID_ARGUMENT", long[:64] + "… INVALID_ARGUMENT", "views:p1 0"}
	if got := rowsOf(rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("a page with bad rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, _, err := m.counters.Fresh(ctx, []string{"views:p9"}, 0, func(int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if c, err := m.counters.Live(ctx, "views:p9"); err == nil {
		t.Errorf("a read of an unused counter created it: %+v", c)
	}
}

// TestAPageIsBoundedAndNamedOneWay: more than 200 counters, an unknown
// kind, both ways at once, or neither, are 400s that name what to fix.
func TestAPageIsBoundedAndNamedOneWay(t *testing.T) {
	m := newMemCore(t, nil)
	ctx := context.Background()
	keys := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprint("p", i))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		body wire.GetCountersRequest
		want string
	}{
		{"200 counters", page(keys(50), "likes", "views", "reactions", "watchers"), ""},
		{"201 counters", page(keys(67), "likes", "views", "reactions"), "1 to 200"},
		{"an unknown kind", page(keys(2), "likes", strings.Repeat("x", 5000)), "is not a kind"},
		{"both ways", wire.GetCountersRequest{CounterIDs: []string{"views:p1"}, Keys: keys(1), Kinds: []string{"views"}}, "goes without keys and kinds"},
		{"neither", wire.GetCountersRequest{}, "is required"},
		{"no kinds", wire.GetCountersRequest{Keys: keys(1)}, "is required"},
	} {
		_, err := m.GetCounters(ctx, admin, tc.body)
		switch {
		case tc.want == "" && err != nil, tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		case err != nil && len(err.Error()) > 300:
			t.Errorf("%s: an error of %d bytes echoes its input", tc.name, len(err.Error()))
		}
	}
}

// TestAPagesIdsCostWhatItsBodyDoes: a key too long for any id, named by
// 200 kinds, builds ids of a bounded length, each row failing alone.
// Built whole, a 60 KB key (a body under the 64 KiB bound) made 12 MB of
// ids.
func TestAPagesIdsCostWhatItsBodyDoes(t *testing.T) {
	long := strings.Repeat("k", 60_000)
	body := wire.GetCountersRequest{Keys: []string{long}, Kinds: slices.Repeat([]string{"likes"}, 200)}
	kinds, err := counter.ParseKinds(testKinds)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ids, err := counterIDsOf(body, kinds)
	runtime.ReadMemStats(&after) // before any core is made: no goroutine of one allocates meanwhile
	if err != nil || len(ids) != 200 {
		t.Fatalf("%d ids, %v", len(ids), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("200 ids of a 60 KB key took %d KB", grew>>10)
	}
	rows, err := newMemCore(t, nil).GetCounters(context.Background(), user, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if codeOf(r.Err) != "INVALID_ARGUMENT" || r.Row.CounterID != "likes:"+long[:58]+"…" {
			t.Fatalf("a row of the long key: %q %v", r.Row.CounterID, r.Err)
		}
	}
}

// TestAnUnusedCountersRowIsAsOfItsRead: a counter of a kind nobody used
// is 0 as of the read that found it absent, not as of the call: one
// answered from the cache a second later says so (it said now, though
// the counter may have been counted since the read).
func TestAnUnusedCountersRowIsAsOfItsRead(t *testing.T) {
	m := newMemCore(t, map[string]string{"FEED_CACHE": "2s"})
	read := m.now
	for range 2 {
		rows, err := m.GetCounters(context.Background(), anonymous, wire.GetCountersRequest{CounterIDs: []string{"views:unused"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := read.Format(time.RFC3339Nano); rows[0].Row.AsOf != want || rows[0].Row.Count == nil || *rows[0].Row.Count != 0 {
			t.Errorf("at %s: %+v, want 0 as of %s", m.now.Format(time.RFC3339), rows[0].Row, want)
		}
		m.advance(time.Second)
	}
}

// TestAHotPageIsReadOncePerBound: within FEED_CACHE every reader's page
// is answered from the instance's cache (no document read, no token of
// feed spent); past it, the documents are read again, once, in one
// batched read. A reader's own state is read every time, exactly.
func TestAHotPageIsReadOncePerBound(t *testing.T) {
	m := newMemCore(t, map[string]string{"FEED_CACHE": "2s"})
	ctx := context.Background()
	body := page([]string{"p1", "p2", "p3", "p4", "p5"}, "views", "watchers")
	reads := func(caller Caller) int64 {
		t.Helper()
		paid, led := ledger.New(ctx, caller.Admin)
		if _, err := m.GetCounters(paid, caller, body); err != nil {
			t.Fatal(err)
		}
		if led.Unbudgeted() != 0 {
			t.Errorf("%d reads past the budget", led.Unbudgeted())
		}
		return led.Reads()
	}
	if n := reads(user); n != 10 {
		t.Errorf("a cold page of 10 counters read %d documents, want 10", n)
	}
	for i := range 20 {
		if n := reads(Caller{Function: "f", User: fmt.Sprint("reader-", i), Addr: "10.1.0.1"}); n != 0 {
			t.Errorf("reader %d's warm page read %d documents, want 0", i, n)
		}
	}
	m.mu.Lock()
	m.now = m.now.Add(2 * time.Second)
	m.mu.Unlock()
	if n := reads(user); n != 10 {
		t.Errorf("past FEED_CACHE a page read %d documents, want 10", n)
	}
}

// TestConcurrentPagesReadACounterOnce: twenty readers' pages of the same
// ten counters, all at once on one instance, read each counter's document
// once: a read under way is waited for, not repeated.
func TestConcurrentPagesReadACounterOnce(t *testing.T) {
	m := newMemCore(t, map[string]string{"FEED_CACHE": "2s"})
	ctx := context.Background()
	body := page([]string{"p1", "p2", "p3", "p4", "p5"}, "views", "watchers")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := m.GetCounters(ctx, Caller{Function: "f", User: fmt.Sprint("r", i), Addr: "10.2.0.1"}, body); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if reads := m.db.Stats()["feed"].Reads; reads != 10 {
		t.Errorf("20 pages of 10 counters at once read %d documents, want 10", reads)
	}
}

package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// row is a row of getCounters.
type row struct {
	CounterID string           `json:"counter_id"`
	Count     *int64           `json:"count"`
	AsOf      string           `json:"as_of"`
	Member    *bool            `json:"member"`
	Choice    *string          `json:"choice"`
	Counts    map[string]int64 `json:"counts"`
	Estimate  bool             `json:"estimate"`
	Error     *struct{ Code string }
}

// feed reads a page with token: its rows, by counter id.
func feed(t *testing.T, token, body string) (map[string]row, []row) {
	t.Helper()
	r := call(t, token, "POST", "getCounters", body)
	var out struct{ Counters []row }
	if r.Decode(t, &out); r.Status != http.StatusOK {
		t.Fatalf("getCounters: %s", r)
	}
	byID := map[string]row{}
	for _, c := range out.Counters {
		byID[c.CounterID] = c
	}
	return byID, out.Counters
}

// rollUp has reconcile roll counter id up now (the roll-up's own write
// path, without waiting for events this package does not deliver).
func rollUp(t *testing.T, id string) {
	t.Helper()
	if r := testenv.Do(t, "POST", base+"/reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatalf("reconcileCounters %s: %s", id, r)
	}
}

// TestAFeedPageInOneCall: a page of 20 posts × 4 kinds, one call, equal
// to strong reads once the roll-up has landed, with the reader's own
// likes and reactions, also just after they changed them from another
// device; an unused counter of a kind is 0 and nothing is created; a bad
// row leaves the others answered.
func TestAFeedPageInOneCall(t *testing.T) {
	backend := admin(t)
	reader := user(t, "reader")
	readerAgain := testenv.ValidIDToken(project, "reader-"+run) // the same user on another device
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("feed-%s-%d", run, i))
	}
	// Every other post has likes, reactions and views of a few users; the
	// reader likes post 0 and loves post 2.
	var wg sync.WaitGroup
	for i, key := range keys {
		if i%2 == 1 {
			continue
		}
		wg.Go(func() {
			for u := range 3 + i%4 {
				member := fmt.Sprintf("fan%d-%s", u, run)
				for _, body := range []string{
					fmt.Sprintf(`{"counter_id":"likes:%s","member":%q}`, key, member),
					fmt.Sprintf(`{"counter_id":"reactions:%s","member":%q,"choice":%q}`, key, member, []string{"like", "wow"}[u%2]),
					fmt.Sprintf(`{"counter_id":"watchers:%s","member":%q}`, key, member),
					fmt.Sprintf(`{"counter_id":"views:%s","delta":%d}`, key, 1+u),
				} {
					if r := call(t, backend, "POST", "incrementCounter", body); r.Status != http.StatusOK {
						t.Errorf("%s: %s", body, r)
					}
				}
			}
		})
	}
	wg.Wait()
	if r := call(t, reader, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"likes:%s"}`, keys[0])); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if r := call(t, reader, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"reactions:%s","choice":"love"}`, keys[2])); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	kinds := []string{"likes", "reactions", "views", "watchers"}
	for i, key := range keys {
		for _, k := range kinds {
			if i%2 == 0 {
				rollUp(t, k+":"+key)
			}
		}
	}
	// A count is at most FEED_CACHE (1 s here) older than its as_of says:
	// this instance cached the first uses' documents.
	time.Sleep(time.Second + 100*time.Millisecond)
	body, _ := json.Marshal(map[string]any{"keys": keys, "kinds": kinds})
	byID, rows := feed(t, reader, string(body))
	if len(rows) != 80 || rows[0].CounterID != "likes:"+keys[0] || rows[5].CounterID != "reactions:"+keys[1] {
		t.Fatalf("%d rows, not key by key in the kinds' order: %+v", len(rows), rows[:6])
	}
	for i, key := range keys {
		for _, k := range kinds {
			id := k + ":" + key
			got := byID[id]
			if got.Count == nil || got.Error != nil {
				t.Errorf("%s: %+v", id, got)
				continue
			}
			if want := strong(t, backend, id); *got.Count != want {
				t.Errorf("%s counts %d, a strong read %d", id, *got.Count, want)
			}
			switch k {
			case "likes":
				if got.Member == nil || *got.Member != (i == 0) {
					t.Errorf("%s: the reader's like %v, want %v", id, got.Member, i == 0)
				}
			case "reactions":
				want := map[bool]string{true: "love"}[i == 2]
				if got.Choice == nil || *got.Choice != want || len(got.Counts) != 6 {
					t.Errorf("%s: the reader's reaction %v (counts %v), want %q", id, got.Choice, got.Counts, want)
				}
			case "watchers":
				if !got.Estimate {
					t.Errorf("%s: no estimate", id)
				}
			}
		}
	}
	// From their other device the reader unlikes post 0 and switches to
	// wow on post 2: the next page says so at once.
	call(t, readerAgain, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"likes:%s","delta":-1}`, keys[0]))
	call(t, readerAgain, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"reactions:%s","choice":"wow"}`, keys[2]))
	byID, _ = feed(t, reader, string(body))
	if r := byID["likes:"+keys[0]]; r.Member == nil || *r.Member {
		t.Errorf("after an unlike from another device: %+v", r)
	}
	if r := byID["reactions:"+keys[2]]; r.Choice == nil || *r.Choice != "wow" {
		t.Errorf("after a switch from another device: %+v", r)
	}
	// Unused counters of a kind are 0, and the read created none of them.
	if r := byID["likes:"+keys[1]]; r.Count == nil || *r.Count != 0 || r.Member == nil || *r.Member {
		t.Errorf("an unused counter: %+v", r)
	}
	if _, err := testenv.Firestore(t, project).Doc("counters/likes:" + keys[1]).Get(context.Background()); err == nil {
		t.Error("reading an unused counter created it")
	}
	// One bad row, the others answered.
	_, rows = feed(t, reader, fmt.Sprintf(`{"counter_ids":["likes:%s","nokind-%s","views:%s"]}`, keys[0], run, keys[0]))
	if rows[1].Error == nil || rows[1].Error.Code != "NOT_FOUND" || rows[1].Count != nil || rows[0].Count == nil || rows[2].Count == nil {
		t.Errorf("a page with a bad row: %+v", rows)
	}
}

// TestCountsMirroredIntoTheAppsDocuments: a kind's mirror is the count
// (a choice kind's: its count and counts) in the app's document, written
// by the roll-up; never into a document that does not exist.
func TestCountsMirroredIntoTheAppsDocuments(t *testing.T) {
	fs := testenv.Firestore(t, project)
	ctx := context.Background()
	post, missing := "mirrored-"+run, "nopost-"+run
	if _, err := fs.Doc("posts/"+post).Set(ctx, map[string]any{"title": "hello"}); err != nil {
		t.Fatal(err)
	}
	backend := admin(t)
	for i := range 3 {
		member := fmt.Sprintf("m%d-%s", i, run)
		for _, key := range []string{post, missing} {
			for _, body := range []string{
				fmt.Sprintf(`{"counter_id":"hearts:%s","member":%q}`, key, member),
				fmt.Sprintf(`{"counter_id":"votes:%s","member":%q,"choice":%q}`, key, member, []string{"up", "up", "down"}[i]),
			} {
				if r := call(t, backend, "POST", "incrementCounter", body); r.Status != http.StatusOK {
					t.Fatalf("%s: %s", body, r)
				}
			}
		}
	}
	for _, id := range []string{"hearts:" + post, "votes:" + post, "hearts:" + missing, "votes:" + missing} {
		rollUp(t, id)
	}
	snap, err := fs.Doc("posts/" + post).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := snap.Data()
	votes, _ := data["votes"].(map[string]any)
	counts, _ := votes["counts"].(map[string]any)
	if data["hearts"] != int64(3) || votes["count"] != int64(3) || counts["up"] != int64(2) || counts["down"] != int64(1) || data["title"] != "hello" {
		t.Errorf("the post after the roll-up: %v", data)
	}
	if _, err := fs.Doc("posts/" + missing).Get(ctx); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("a mirror into a post that does not exist: %v", err)
	}
}

// TestAPostThatTakesNoMirrorStopsNoRollUp: a post at Firestore's size
// limit refuses the mirrored count (INVALID_ARGUMENT); the roll-up of its
// counter is written without it. Before, the refusal failed the whole
// commit: the counter's own document never rolled up again.
func TestAPostThatTakesNoMirrorStopsNoRollUp(t *testing.T) {
	fs := testenv.Firestore(t, project)
	ctx := context.Background()
	post := "full-" + run
	// A document's size: its name's segments (each + 1) + 16, each field's
	// name + 1 and string + 1, + 32 (Firestore's storage size). This one
	// is 5 bytes short of 1 MiB: the field "hearts" (7 + 8) does not fit.
	// Two fields: one string is 1,048,487 bytes at most.
	rest := 1<<20 - 5 - (len("posts") + 1 + len(post) + 1 + 16) - 2*(len("b1")+1+1) - 32
	if _, err := fs.Doc("posts/"+post).Set(ctx, map[string]any{"b1": strings.Repeat("x", rest/2), "b2": strings.Repeat("y", rest-rest/2)}); err != nil {
		t.Fatal(err)
	}
	backend := admin(t)
	for i := range 2 {
		if r := call(t, backend, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"hearts:%s","member":"f%d-%s"}`, post, i, run)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	rollUp(t, "hearts:"+post)
	snap, err := fs.Doc("counters/hearts:" + post).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.Data()["count"]; n != int64(2) {
		t.Errorf("the counter's roll-up beside a post that takes no mirror: count %v, want 2", n)
	}
	if snap, err := fs.Doc("posts/" + post).Get(ctx); err != nil || snap.Data()["hearts"] != nil {
		t.Errorf("the full post: %v, hearts %v", err, snap.Data()["hearts"])
	}
}

// TestTheGoClientReadsAPage: the Go client's Feed (every kind of every
// key, in that order) and Counters (ids), with the reader's own choice, an
// unused counter of a kind at 0 and a counter of no kind failing alone.
func TestTheGoClientReadsAPage(t *testing.T) {
	ctx := context.Background()
	reader := goClient(t, "go-feed-reader-"+run)
	used, unused := "go-feed-"+run, "go-feed-unused-"+run
	if _, err := reader.React(ctx, "reactions:"+used, "love"); err != nil {
		t.Fatal(err)
	}
	page, err := reader.Feed(ctx, []string{used, unused}, []string{"reactions", "views"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range page.Counters {
		line := r.CounterID
		switch {
		case r.Count != nil && r.CounterID == "reactions:"+used && (*r.Count == 0 || *r.Count == 1):
			line += " count=0or1" // 1 once the roll-up of the reaction has landed
		case r.Count != nil:
			line += fmt.Sprint(" count=", *r.Count)
		}
		if r.Choice != nil {
			line += fmt.Sprintf(" choice=%q", *r.Choice)
		}
		got = append(got, line)
	}
	want := []string{
		"reactions:" + used + ` count=0or1 choice="love"`, "views:" + used + " count=0",
		"reactions:" + unused + ` count=0 choice=""`, "views:" + unused + " count=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Feed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	page, err = reader.Counters(ctx, []string{"nothing-" + run, "reactions:" + used})
	switch {
	case err != nil:
		t.Fatal(err)
	case len(page.Counters) != 2 || page.Counters[0].Error == nil || page.Counters[0].Error.Code != "NOT_FOUND" || page.Counters[0].Count != nil:
		t.Errorf("Counters: a counter of no kind: %+v", page.Counters)
	case page.Counters[1].Choice == nil || *page.Counters[1].Choice != "love" || page.Counters[1].Counts == nil:
		t.Errorf("Counters: the reader's reaction: %+v", page.Counters[1])
	}
}

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
	"github.com/shardcount/shardcount/internal/service"
)

// secondInstance serves the functions from a second service.Server in
// this process: an instance of its own (its own cache of counter
// documents, its own group commit), like a second Cloud Functions
// instance.
func secondInstance(t *testing.T) string {
	s := service.New(os.Getenv)
	mux := http.NewServeMux()
	for _, spec := range service.Catalog {
		mux.Handle("/"+spec.Name, s.Handler(spec.Name))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDeleteCounterLeavesNothing deletes a counter of 1,000 shards with
// idempotency records and roll-up slots while another instance, which
// cached it, keeps incrementing it. The id is refused (409, Retry-After)
// until the late writes can no longer land; after it, reconcile purges
// everything under counters/{id}, tombstone included, and a counter
// created again with the id counts none of the old writes.
func TestDeleteCounterLeavesNothing(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 1000)
	fs := testenv.Firestore(t, project)
	ctx := context.Background()
	bw := fs.BulkWriter(ctx)
	for k := range 1000 {
		if _, err := bw.Set(fs.Doc(fmt.Sprintf("counters/%s/shards/%d", id, k)), map[string]any{"count": 1, "commits": 1, "slow": 0}); err != nil {
			t.Fatal(err)
		}
	}
	bw.End()
	other := secondInstance(t)
	for i := range 20 {
		if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Idempotency-Key", fmt.Sprintf("k%d", i)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	if r := testenv.Do(t, "POST", other+"/incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatal(r) // the other instance caches the counter now
	}
	cachedBy := time.Now() // its read of the counter began before this
	waitEventual(t, id, 1021, time.Now().Add(30*time.Second))
	// The wait may outlast the other instance's cache (SHARD_COUNT_CACHE,
	// 2 s, counted from the read's start) on a loaded machine, or end just
	// before it does: once that entry has expired, an increment just
	// before the delete caches the counter afresh, for 2 s against the
	// tombstone's commit (the delete's purge comes after it).
	time.Sleep(time.Until(cachedBy.Add(2 * time.Second)))
	if r := testenv.Do(t, "POST", other+"/incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatal(r)
	}

	// The other instance goes on writing, from its cache. An increment is
	// late when it was sent once the tombstone could be read.
	stop := make(chan struct{})
	var deleted atomic.Bool
	var late atomic.Int64
	var wg sync.WaitGroup
	stopWriting := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopWriting) // a Fatal below ends the test, not the writes
	wg.Go(func() {
		for !deleted.Load() {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if snap, err := fs.Doc("counters/" + id).Get(ctx); err == nil && snap.Data()["deleted"] == true {
				deleted.Store(true)
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			after := deleted.Load()
			if r := testenv.Do(t, "POST", other+"/incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status == http.StatusOK && after {
				late.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	r := testenv.Do(t, "POST", url("deleteCounter"), fmt.Sprintf(`{"counter_id":%q}`, id))
	var del struct {
		Deleted       bool   `json:"deleted"`
		ReusableAfter string `json:"reusable_after"`
	}
	deleted.Store(true) // if the look above has not seen it yet
	r.Decode(t, &del)
	reusable, err := time.Parse(time.RFC3339Nano, del.ReusableAfter)
	if r.Status != http.StatusOK || !del.Deleted || err != nil {
		t.Fatalf("deleteCounter: %s", r)
	}
	for _, check := range []testenv.Response{
		testenv.Do(t, "GET", url("getCounter")+"?counter_id="+id, ""),
		testenv.Do(t, "GET", url("getCounter")+"?consistency=strong&counter_id="+id, ""),
		testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)),
	} {
		if check.Status != http.StatusNotFound {
			t.Errorf("after the delete: %s, want 404", check)
		}
	}
	r = testenv.Do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q}`, id))
	if r.Status != http.StatusConflict || r.ErrorCode() != "FAILED_PRECONDITION" || r.Header.Get("Retry-After") == "" {
		t.Errorf("re-creating the id at once: %s, want 409 FAILED_PRECONDITION with Retry-After", r)
	}
	if r := testenv.Do(t, "POST", url("deleteCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Errorf("deleting again (a retry): %s", r)
	}

	time.Sleep(time.Until(reusable))
	stopWriting()
	if late.Load() == 0 {
		t.Error("the other instance wrote nothing once the tombstone could be read: the test proves nothing")
	}
	// The scheduled reconcile purges what the late writes left, and the
	// tombstone: the deletion marked the counter at purge_after, and the
	// run visits it once that marker has settled.
	var sweep struct{ Purged int }
	for deadline := time.Now().Add(settle + 15*time.Second); ; {
		r := testenv.Do(t, "POST", url("reconcileCounters"), `{}`)
		r.Decode(t, &sweep)
		left := testenv.Dump(t, fs, "counters/"+id)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after reusable_after, %d documents remain, e.g. %v", settle+15*time.Second, len(left), firstKey(left))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := fs.Doc("counter_activity/" + id).Get(context.Background()); status.Code(err) != codes.NotFound {
		t.Errorf("the purged counter's activity marker: %v, want it gone with the counter", err)
	}
	createCounter(t, id, 3)
	if got := getCounter(t, id, "strong").Count; got != 0 {
		t.Errorf("the new counter starts at %d: it counts writes of the old one", got)
	}
	if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Idempotency-Key", "k0"); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("an old key on the new counter: %s, want applied, not replayed", r)
	}
	t.Logf("%d late increments of the other instance after the delete, all purged", late.Load())
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// TestResetUnderLoad resets a counter while keyed increments of random
// deltas run, each retried until its answer is definite. The rule: the
// value becomes count as of as_of, and increments committed after as_of
// count on top. Each key's record is created in its increment's commit,
// so its creation time is the increment's commit time: the final value
// must be count plus the deltas of the records created after as_of.
func TestResetUnderLoad(t *testing.T) {
	// Not parallel: it checks that the roll-up follows within a few
	// cadences, which other tests' events would delay.
	waitForQuietEvents(t)
	id := newCounterID(t)
	createCounter(t, id, 10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"counter_id":%q,"delta":%d}`, id, 1+rand.IntN(9))
				for {
					r := testenv.Do(t, "POST", url("incrementCounter"), body, "Idempotency-Key", fmt.Sprintf("w%d-%d", w, i))
					if r.Status == http.StatusOK {
						break
					}
					if r.Status != http.StatusServiceUnavailable {
						t.Errorf("increment: %s", r)
						return
					}
				}
			}
		})
	}
	time.Sleep(time.Second)
	r := testenv.Do(t, "POST", url("resetCounter"), fmt.Sprintf(`{"counter_id":%q,"count":1000}`, id))
	var reset struct {
		Count int64  `json:"count"`
		AsOf  string `json:"as_of"`
	}
	r.Decode(t, &reset)
	asOf, err := time.Parse(time.RFC3339Nano, reset.AsOf)
	if r.Status != http.StatusOK || reset.Count != 1000 || err != nil {
		t.Fatalf("resetCounter: %s", r)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	records, err := testenv.Firestore(t, project).Collection("counters/" + id + "/idempotency_keys").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	want, before, after := int64(1000), 0, 0
	for _, rec := range records {
		if rec.CreateTime.After(asOf) {
			want += rec.Data()["delta"].(int64)
			after++
		} else {
			before++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d increments before as_of and %d after: the reset did not happen under load", before, after)
	}
	if got := getCounter(t, id, "strong").Count; got != want {
		t.Errorf("strong read %d, want %d: 1000 as of %s plus the %d increments committed after it", got, want, reset.AsOf, after)
	}
	if got, _ := waitEventual(t, id, want, time.Now().Add(3*cadence)); got != want {
		t.Errorf("the roll-up holds %d, want %d", got, want)
	}
}

// TestTenResetsAtOnce: a counter at 100, reset to 0 by ten requests at
// once (a client retrying after 503s sends them so). Each summed 100 and
// added −100, leaving −900, until a reset committed only on the version of
// the counter document it read; now they land one after another.
func TestTenResetsAtOnce(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 4)
	if r := increment(t, id, 100); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for {
				r := testenv.Do(t, "POST", url("resetCounter"), fmt.Sprintf(`{"counter_id":%q,"count":0}`, id))
				if r.Status == http.StatusOK {
					return
				}
				if r.Status != http.StatusServiceUnavailable {
					t.Errorf("resetCounter: %s", r)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := getCounter(t, id, "strong").Count; got != 0 {
		t.Errorf("after ten resets to 0 the counter holds %d", got)
	}
}

// TestListCountersPagesByID: a user's counters, in id order, a page at a
// time; the page token is the last id.
func TestListCountersPagesByID(t *testing.T) {
	t.Parallel()
	uid := fmt.Sprintf("lister-%d", rand.IntN(1e9))
	testenv.CreateUser(t, project, uid)
	bearer := "Bearer " + testenv.ValidIDToken(project, uid)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("%s-%d", uid, i)
		ids = append(ids, id)
		// AUTH=off: a token that is sent still names the owner.
		if r := testenv.Do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q,"num_shards":2}`, id), "Authorization", bearer); r.Status != http.StatusCreated {
			t.Fatal(r)
		}
	}
	sort.Strings(ids)
	var got []string
	token := ""
	for page := 0; ; page++ {
		q := "?limit=2&owner=" + uid
		if token != "" {
			q += "&page_token=" + token
		}
		r := testenv.Do(t, "GET", url("listCounters")+q, "")
		var list struct {
			Counters []struct {
				CounterID string `json:"counter_id"`
				Owner     string `json:"owner"`
				NumShards int    `json:"num_shards"`
				CreatedAt string `json:"created_at"`
			} `json:"counters"`
			NextPageToken string `json:"next_page_token"`
		}
		r.Decode(t, &list)
		if r.Status != http.StatusOK || page > 5 {
			t.Fatalf("page %d: %s", page, r)
		}
		for _, c := range list.Counters {
			if c.Owner != uid || c.NumShards != 2 || c.CreatedAt == "" {
				t.Errorf("listed %+v", c)
			}
			got = append(got, c.CounterID)
		}
		if token = list.NextPageToken; token == "" {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("listed %v, want %v", got, ids)
	}
}

// TestCreateAfterDeleteStartsAtZero: the id of a deleted counter, created
// again as soon as reusable_after passes (no reconcile in between), and
// the id of a counter whose document was deleted by hand (its shards left
// behind): both new counters start at 0 with nothing of the old one under
// them. Before, re-creating a hand-deleted counter brought its old count
// back (3 became 4). The purges' shard deletions are held back until both
// are created again, as a busy trigger may deliver them; before, each
// claimed a roll-up slot under the new counter (one was found left, now
// and then, in full runs).
func TestCreateAfterDeleteStartsAtZero(t *testing.T) {
	t.Parallel()
	fs := testenv.Firestore(t, project)
	ctx := context.Background()
	deleted, byHand := newCounterID(t), newCounterID(t)
	for _, id := range []string{deleted, byHand} {
		createCounter(t, id, 4)
		for i := range 3 {
			if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Idempotency-Key", fmt.Sprint("k", i)); r.Status != http.StatusOK {
				t.Fatal(r)
			}
		}
	}
	shards := 0
	var (
		mu   sync.Mutex
		held []*triggerbridge.Delivery
	)
	for _, id := range []string{deleted, byHand} {
		docs, err := fs.Collection("counters/" + id + "/shards").Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		shards += len(docs)
		tapCounter(t, id, func(d *triggerbridge.Delivery) bool {
			if e, err := fsevent.Decode(d.Header.Get("Content-Type"), d.Body); err != nil || !e.Deleted() {
				return true
			}
			mu.Lock()
			defer mu.Unlock()
			held = append(held, d)
			return false
		})
	}
	r := testenv.Do(t, "POST", url("deleteCounter"), fmt.Sprintf(`{"counter_id":%q}`, deleted))
	var del struct {
		ReusableAfter string `json:"reusable_after"`
	}
	r.Decode(t, &del)
	reusable, err := time.Parse(time.RFC3339Nano, del.ReusableAfter)
	if err != nil {
		t.Fatalf("deleteCounter: %s", r)
	}
	if _, err := fs.Doc("counters/" + byHand).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(reusable) + 100*time.Millisecond)
	for _, id := range []string{deleted, byHand} {
		createCounter(t, id, 2)
	}
	// Every shard's deletion, counted once: a redelivery may come too.
	var deletions []*triggerbridge.Delivery
	for deadline := time.Now().Add(time.Minute); distinctSubjects(deletions) < shards; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d shards' deletions seen, want %d", distinctSubjects(deletions), shards)
		}
		mu.Lock()
		deletions = slices.Clone(held)
		mu.Unlock()
	}
	for _, d := range deletions {
		// What tells them from a deletion of the new counter's shard: the
		// emulator sends the deleted document with its update time.
		if e, _ := fsevent.Decode(d.Header.Get("Content-Type"), d.Body); e.LastWrittenAt().IsZero() {
			t.Errorf("a shard deletion without its old document's update time: %s", d.Subject())
		}
		if status, err := bridge.Deliver(ctx, d); err != nil || status != http.StatusNoContent {
			t.Errorf("deliver %s: %d %v", d.Subject(), status, err)
		}
	}
	for _, id := range []string{deleted, byHand} {
		if got := getCounter(t, id, "strong").Count; got != 0 {
			t.Errorf("%s created again holds %d, want 0", id, got)
		}
		for path := range testenv.Dump(t, fs, "counters/"+id) {
			if !strings.HasSuffix(path, "counters/"+id) {
				t.Errorf("%s created again: %s is left from the old counter", id, path)
			}
		}
	}
}

// distinctSubjects counts the documents events are about.
func distinctSubjects(events []*triggerbridge.Delivery) int {
	seen := map[string]bool{}
	for _, d := range events {
		seen[d.Subject()] = true
	}
	return len(seen)
}

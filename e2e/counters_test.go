package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

type createResp struct {
	CounterID string `json:"counter_id"`
	NumShards int    `json:"num_shards"`
}

type incrementResp struct {
	CounterID string `json:"counter_id"`
	Delta     int64  `json:"delta"`
	Shard     int    `json:"shard"`
	Replayed  bool   `json:"replayed"`
}

type getResp struct {
	CounterID   string `json:"counter_id"`
	Count       int64  `json:"count"`
	NumShards   int    `json:"num_shards"`
	Consistency string `json:"consistency"`
	AsOf        string `json:"as_of"`
}

// newCounterID returns an id no other test uses.
func newCounterID(t *testing.T) string {
	return strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()) + "-" + strconv.Itoa(rand.IntN(1e9))
}

func createCounter(t *testing.T, id string, shards int) {
	t.Helper()
	r := testenv.Do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q,"num_shards":%d}`, id, shards))
	if r.Status != http.StatusCreated {
		t.Fatalf("createCounter: %s", r)
	}
}

func getCounter(t *testing.T, id, consistency string) getResp {
	t.Helper()
	r := testenv.Do(t, "GET", url("getCounter")+"?counter_id="+id+"&consistency="+consistency, "")
	if r.Status != http.StatusOK {
		t.Fatalf("getCounter: %s", r)
	}
	var g getResp
	r.Decode(t, &g)
	return g
}

func TestConcurrentIncrementsAreExact(t *testing.T) {
	t.Parallel()
	const (
		shards     = 10
		increments = 2000
		workers    = 32
	)
	id := newCounterID(t)
	createCounter(t, id, shards)

	inc := incrementMany(t, id, increments, workers, 0)
	accepted := inc.sum
	for s := range inc.shards {
		if s < 0 || s >= shards {
			t.Errorf("shard %d used, outside [0, %d)", s, shards)
		}
	}
	if len(inc.shards) < 2 {
		t.Errorf("all increments landed on %d shard(s): the shard is not random", len(inc.shards))
	}
	got := getCounter(t, id, "strong")
	if got.Count != accepted {
		t.Errorf("strong read = %d, sum of accepted deltas = %d", got.Count, accepted)
	}
	if got.NumShards != shards || got.Consistency != "strong" || got.CounterID != id {
		t.Errorf("strong read = %+v", got)
	}
	if _, err := time.Parse(time.RFC3339Nano, got.AsOf); err != nil {
		t.Errorf("as_of %q: %v", got.AsOf, err)
	}

	// The shard documents themselves: ids in range, and they hold the sum.
	fs := testenv.Firestore(t, project)
	docs, err := fs.Collection("counters/" + id + "/shards").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, d := range docs {
		n, err := strconv.Atoi(d.Ref.ID)
		if err != nil || n < 0 || n >= shards {
			t.Errorf("unexpected shard document %s", d.Ref.Path)
		}
		stored += d.Data()["count"].(int64)
	}
	if stored != accepted {
		t.Errorf("shards hold %d, want %d", stored, accepted)
	}
}

func TestActionTypeIncrementsAndDecrements(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 3)
	for _, action := range []string{"increment", "increment", "increment", "decrement"} {
		r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"action_type":%q}`, id, action))
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %s", action, r)
		}
	}
	// No delta and no action_type means +1.
	if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatalf("default increment: %s", r)
	}
	if got := getCounter(t, id, "strong").Count; got != 3 {
		t.Errorf("count = %d, want 3", got)
	}
}

func TestIdempotencyKeyCountsOnce(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 10)
	body := fmt.Sprintf(`{"counter_id":%q,"delta":7}`, id)

	// The same key five times at once: one applies, all answer alike.
	responses := make([]testenv.Response, 5)
	var wg sync.WaitGroup
	for i := range responses {
		wg.Go(func() {
			responses[i] = testenv.Do(t, "POST", url("incrementCounter"), body, "Idempotency-Key", "like-42")
		})
	}
	wg.Wait()
	replayed := 0
	var first incrementResp
	responses[0].Decode(t, &first)
	for _, r := range responses {
		if r.Status != http.StatusOK {
			t.Fatalf("response %s", r)
		}
		var got incrementResp
		r.Decode(t, &got)
		if got.Delta != first.Delta || got.Shard != first.Shard || got.CounterID != first.CounterID {
			t.Errorf("answers differ: %s vs %s", r.Body, responses[0].Body)
		}
		if r.Header.Get("Idempotent-Replayed") == "true" {
			replayed++
			if !got.Replayed {
				t.Errorf("a replay without \"replayed\": true in its body: %s", r.Body)
			}
		}
	}
	if replayed != 4 {
		t.Errorf("%d responses marked as replayed, want 4", replayed)
	}
	if got := getCounter(t, id, "strong").Count; got != 7 {
		t.Fatalf("after one key sent 5 times: count = %d, want 7", got)
	}

	// Different keys each count.
	for i := range 5 {
		r := testenv.Do(t, "POST", url("incrementCounter"), body, "Idempotency-Key", fmt.Sprintf("other-%d", i))
		if r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	if got := getCounter(t, id, "strong").Count; got != 7*6 {
		t.Fatalf("after 5 more keys: count = %d, want %d", got, 7*6)
	}

	// Reusing a key with another delta is a conflict and applies nothing.
	r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"delta":8}`, id), "Idempotency-Key", "like-42")
	if r.Status != http.StatusConflict || r.ErrorCode() != "ALREADY_EXISTS" {
		t.Errorf("key reused with another delta: %s", r)
	}
	if got := getCounter(t, id, "strong").Count; got != 7*6 {
		t.Fatalf("after a conflicting key: count = %d, want %d", got, 7*6)
	}

	// The key's record expires 24 h after its write (Firestore TTL field).
	fs := testenv.Firestore(t, project)
	keys, err := fs.Collection("counters/" + id + "/idempotency_keys").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6 {
		t.Fatalf("%d key records, want 6", len(keys))
	}
	expire := keys[0].Data()["expire_at"].(time.Time)
	if d := time.Until(expire); d < 23*time.Hour || d > 24*time.Hour {
		t.Errorf("expire_at in %s, want about 24h", d)
	}
}

func TestExpiredIdempotencyKeyAppliesAgain(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 1)
	body := fmt.Sprintf(`{"counter_id":%q,"delta":2}`, id)
	if r := testenv.Do(t, "POST", url("incrementCounter"), body, "Idempotency-Key", "k"); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	// Age the record past its expiry, as if TTL deletion had not run yet.
	fs := testenv.Firestore(t, project)
	keys, err := fs.Collection("counters/" + id + "/idempotency_keys").Documents(context.Background()).GetAll()
	if err != nil || len(keys) != 1 {
		t.Fatalf("key records: %v, %v", len(keys), err)
	}
	if _, err := keys[0].Ref.Update(context.Background(), []firestore.Update{{Path: "expire_at", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	r := testenv.Do(t, "POST", url("incrementCounter"), body, "Idempotency-Key", "k")
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("expired key: %s (replayed=%q)", r, r.Header.Get("Idempotent-Replayed"))
	}
	if got := getCounter(t, id, "strong").Count; got != 4 {
		t.Errorf("count = %d, want 4 (the expired key applies again)", got)
	}
}

func TestCreateCounter(t *testing.T) {
	t.Parallel()
	fs := testenv.Firestore(t, project)
	for _, shards := range []int{1, 1000} {
		id := newCounterID(t)
		createCounter(t, id, shards)
		snap, err := fs.Doc("counters/" + id).Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Data()["num_shards"].(int64); got != int64(shards) {
			t.Errorf("num_shards = %d, want %d", got, shards)
		}
		// Creating is O(1): no shard document exists before an increment.
		n, err := fs.Collection("counters/" + id + "/shards").Documents(context.Background()).GetAll()
		if err != nil || len(n) != 0 {
			t.Errorf("%d shard documents after create (err %v), want 0", len(n), err)
		}
		g := getCounter(t, id, "strong")
		if g.Count != 0 || g.NumShards != shards {
			t.Errorf("strong read of a new counter = %+v", g)
		}
		e := getCounter(t, id, "eventual")
		if e.Count != 0 || e.Consistency != "eventual" || e.AsOf == "" {
			t.Errorf("eventual read of a new counter = %+v", e)
		}
	}
}

func TestCreateCounterGeneratesAnID(t *testing.T) {
	t.Parallel()
	r := testenv.Do(t, "POST", url("createCounter"), `{}`)
	if r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	var c createResp
	r.Decode(t, &c)
	if err := counter.ValidateID(c.CounterID); err != nil || len(c.CounterID) < 20 {
		t.Errorf("generated id %q: %v", c.CounterID, err)
	}
	if c.NumShards != counter.DefaultShards {
		t.Errorf("num_shards = %d, want the default %d", c.NumShards, counter.DefaultShards)
	}
	getCounter(t, c.CounterID, "eventual")
}

func TestCreateCounterHeuristic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body   string
		shards int
	}{
		{`"followers_count": 0`, 1},
		{`"followers_count": 2500`, 3},
		{`"followers_count": 2500, "post_type": "protected"`, 1},
		{`"followers_count": 1000000, "post_type": "public"`, 1000},
		{`"followers_count": 1000000, "post_type": "protected"`, 100},
		{`"followers_count": 1000000, "num_shards": 7`, 7},
	} {
		id := newCounterID(t)
		r := testenv.Do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q, %s}`, id, tc.body))
		var c createResp
		r.Decode(t, &c)
		if r.Status != http.StatusCreated || c.NumShards != tc.shards {
			t.Errorf("%s: %s, want %d shards", tc.body, r, tc.shards)
		}
	}
}

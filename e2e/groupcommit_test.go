package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/service"
)

// stats reads what the function server counted.
func stats(t *testing.T) service.Stats {
	t.Helper()
	var s service.Stats
	testenv.Do(t, "GET", base+"/debug/shardcount", "").Decode(t, &s)
	return s
}

// TestGroupCommitIsExactUnderDuplicatesAndCancellations sends 2,000
// concurrent keyed increments of -5..+5 to a one-shard counter. A tenth send
// their key twice at once (so often in the same batch); a tenth are
// cancelled by their client mid-flight, then retried with the same key
// until answered, so they may or may not have committed the first time and
// the key settles which. The counter must hold the sum over distinct keys,
// and the server must have made fewer commits than increments.
func TestGroupCommitIsExactUnderDuplicatesAndCancellations(t *testing.T) {
	id := newCounterID(t)
	createCounter(t, id, 1)
	before := stats(t).Firestore["increment"]

	type job struct {
		key          string
		delta        int64
		dup, cancels bool
	}
	var jobs []job
	var want int64
	for i := range 2000 {
		d := rand.Int64N(10) - 5
		if d >= 0 {
			d++ // -5..-1, 1..5
		}
		jobs = append(jobs, job{key: fmt.Sprintf("%s-%d", id, i), delta: d, dup: i%10 == 3, cancels: i%10 == 7})
		want += d
	}
	client := &http.Client{}
	send := func(ctx context.Context, j job) (int, incrementResp, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url("incrementCounter"), strings.NewReader(fmt.Sprintf(`{"counter_id":%q,"delta":%d}`, id, j.delta)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", j.key)
		resp, err := client.Do(req)
		if err != nil {
			return 0, incrementResp{}, err
		}
		defer resp.Body.Close()
		var r incrementResp
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &r)
		return resp.StatusCode, r, nil
	}
	// untilAnswered retries with the same key until a 200.
	untilAnswered := func(j job) (incrementResp, error) {
		for range 50 {
			status, r, err := send(context.Background(), j)
			if err == nil && status == http.StatusOK {
				return r, nil
			}
			if err == nil && status != http.StatusServiceUnavailable {
				return r, fmt.Errorf("key %s: status %d", j.key, status)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return incrementResp{}, fmt.Errorf("key %s: no answer after 50 tries", j.key)
	}

	var (
		mu        sync.Mutex
		answers   = map[string][]incrementResp{}
		cancelled int
		failures  []error
		wg        sync.WaitGroup
		sem       = make(chan struct{}, 64)
	)
	record := func(j job, r incrementResp, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures = append(failures, err)
			return
		}
		if r.Delta != j.delta || r.Shard != 0 {
			failures = append(failures, fmt.Errorf("key %s: answer %+v for delta %d", j.key, r, j.delta))
		}
		answers[j.key] = append(answers[j.key], r)
	}
	for _, j := range jobs {
		copies := 1
		if j.dup {
			copies = 2
		}
		for range copies {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if j.cancels {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(3000))*time.Microsecond)
					_, _, err := send(ctx, j)
					cancel()
					if err != nil {
						mu.Lock()
						cancelled++
						mu.Unlock()
					}
				}
				r, err := untilAnswered(j)
				record(j, r, err)
			})
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %v", len(failures), failures[0])
	}

	// Each key was answered as applied once, the others as replays.
	for key, rs := range answers {
		fresh := 0
		for _, r := range rs {
			if !r.Replayed {
				fresh++
			}
		}
		if fresh > 1 {
			t.Errorf("key %s was answered as applied %d times", key, fresh)
		}
	}
	if got := getCounter(t, id, "strong").Count; got != want {
		t.Errorf("strong read = %d, the distinct keys sum to %d", got, want)
	}
	after := stats(t).Firestore["increment"]
	commits := after.Commits - before.Commits
	t.Logf("2,000 keys (+200 sent twice, %d requests cancelled mid-flight) in %d commits", cancelled, commits)
	if commits >= 2000 || commits <= 0 {
		t.Errorf("%d commits for 2,000 increments: no batching", commits)
	}
	if cancelled == 0 {
		t.Error("no request was cancelled mid-flight: the test did not test that")
	}
	keys, err := testenv.Firestore(t, project).Collection("counters/" + id + "/idempotency_keys").Documents(context.Background()).GetAll()
	if err != nil || len(keys) != len(jobs) {
		t.Errorf("%d key records (err %v), want %d", len(keys), err, len(jobs))
	}
}

type batchResult struct {
	Status    int    `json:"status"`
	CounterID string `json:"counter_id"`
	Delta     int64  `json:"delta"`
	Shard     int    `json:"shard"`
	Replayed  bool   `json:"replayed"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestBatchAnswersPerItem sends one batch with valid items on two counters,
// an invalid item, a key repeated in the batch, a key reused with another
// delta and an unknown counter: the valid items apply, the others get their
// documented error, and nothing else changes.
func TestBatchAnswersPerItem(t *testing.T) {
	a, b := newCounterID(t), newCounterID(t)
	createCounter(t, a, 4)
	createCounter(t, b, 1)
	missing := a + "-missing"
	waitForQuietEvents(t)
	fs := testenv.Firestore(t, project)
	roots := []string{"counters/" + a, "counters/" + b, "counters/" + missing}
	before := testenv.Dump(t, fs, roots...)

	body := fmt.Sprintf(`{"increments":[
		{"counter_id":%[1]q,"delta":3,"idempotency_key":"k1"},
		{"counter_id":%[1]q,"delta":0},
		{"counter_id":%[1]q,"delta":3,"idempotency_key":"k1"},
		{"counter_id":%[1]q,"delta":9,"idempotency_key":"k1"},
		{"counter_id":%[3]q,"delta":1},
		{"counter_id":%[2]q,"action_type":"decrement"},
		{"counter_id":%[1]q}
	]}`, a, b, missing)
	r := testenv.Do(t, "POST", url("incrementCounter"), body)
	if r.Status != http.StatusOK {
		t.Fatalf("batch: %s", r)
	}
	var resp struct{ Results []batchResult }
	r.Decode(t, &resp)
	if len(resp.Results) != 7 {
		t.Fatalf("%d results for 7 items: %s", len(resp.Results), r)
	}
	res := resp.Results
	check := func(i, status int, code, mention string) {
		t.Helper()
		got := res[i]
		if got.Status != status || (code == "") != (got.Error == nil) || got.Error != nil && (got.Error.Code != code || !strings.Contains(got.Error.Message, mention)) {
			t.Errorf("item %d: %+v (error %+v), want %d %s mentioning %q", i, got, got.Error, status, code, mention)
		}
	}
	check(0, 200, "", "")
	check(1, 400, "INVALID_ARGUMENT", "increments[1].delta")
	check(2, 200, "", "")
	check(3, 409, "ALREADY_EXISTS", "delta 3")
	check(4, 404, "NOT_FOUND", missing)
	check(5, 200, "", "")
	check(6, 200, "", "")
	if res[0].Replayed || !res[2].Replayed || res[2].Shard != res[0].Shard || res[0].Delta != 3 || res[5].Delta != -1 || res[6].Delta != 1 {
		t.Errorf("results %+v", res)
	}
	if res[0].Shard != res[6].Shard {
		t.Errorf("the items of counter a landed on shards %d and %d: one counter's items share a commit", res[0].Shard, res[6].Shard)
	}
	if got := getCounter(t, a, "strong").Count; got != 4 {
		t.Errorf("counter a = %d, want 3+1", got)
	}
	if got := getCounter(t, b, "strong").Count; got != -1 {
		t.Errorf("counter b = %d, want -1", got)
	}

	// Nothing but the two shards written, one key record, and their
	// roll-ups' documents (slots, time windows) changed.
	waitForQuietEvents(t)
	after := testenv.Dump(t, fs, roots...)
	var added []string
	for path := range after {
		if _, ok := before[path]; !ok {
			added = append(added, strings.TrimPrefix(path, "projects/"+project+"/databases/"+testenv.Database()+"/documents/"))
		}
	}
	slices.Sort(added)
	for _, p := range added {
		switch {
		case strings.HasPrefix(p, "counters/"+a+"/shards/"), strings.HasPrefix(p, "counters/"+b+"/shards/"),
			strings.HasPrefix(p, "counters/"+a+"/idempotency_keys/"),
			strings.HasPrefix(p, "counters/"+a+"/rollup_slots/"), strings.HasPrefix(p, "counters/"+b+"/rollup_slots/"),
			strings.HasPrefix(p, "counters/"+a+"/windows/"), strings.HasPrefix(p, "counters/"+b+"/windows/"):
		default:
			t.Errorf("unexpected document %s", p)
		}
	}
	keys := 0
	for _, p := range added {
		if strings.Contains(p, "/idempotency_keys/") {
			keys++
		}
	}
	if keys != 1 || strings.Contains(strings.Join(slices.Collect(maps.Keys(after)), " "), missing) {
		t.Errorf("documents added: %v", added)
	}
}

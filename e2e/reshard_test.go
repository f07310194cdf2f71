package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

type reshardResp struct {
	CounterID         string `json:"counter_id"`
	NumShards         int    `json:"num_shards"`
	PreviousNumShards int    `json:"previous_num_shards"`
	MergeUntil        string `json:"merge_until"`
	ShardsMerged      int    `json:"shards_merged"`
}

func reshard(t *testing.T, id string, n int) reshardResp {
	t.Helper()
	r := testenv.Do(t, "POST", url("reshardCounter"), fmt.Sprintf(`{"counter_id":%q,"num_shards":%d}`, id, n))
	if r.Status != http.StatusOK {
		t.Fatalf("reshard %s to %d: %s", id, n, r)
	}
	var resp reshardResp
	r.Decode(t, &resp)
	return resp
}

// shardIDs lists the shard documents of counter id.
func shardIDs(t *testing.T, id string) []int {
	t.Helper()
	refs, err := testenv.Firestore(t, project).Collection("counters/" + id + "/shards").DocumentRefs(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range refs {
		n, err := strconv.Atoi(r.ID)
		if err != nil {
			t.Fatalf("shard document %s", r.Path)
		}
		out = append(out, n)
	}
	return out
}

// TestReshardALiveCounter grows a counter from 1 to 50 shards and shrinks
// it to 3 while 8 workers send keyed +1 increments without pause. Every
// strong read lies between the increments acknowledged before it began and
// those sent before it ended (none lost, none counted twice); at the end it
// equals the acknowledged increments, and once the merge reports done no
// shard >= 3 is left.
func TestReshardALiveCounter(t *testing.T) {
	id := newCounterID(t)
	createCounter(t, id, 1)

	var sent, acked atomic.Int64
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for w := range 8 {
		workers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d-%d", w, i)
				sent.Add(1)
				for {
					r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Idempotency-Key", key)
					if r.Status == http.StatusOK {
						break
					}
					if r.Status != http.StatusServiceUnavailable {
						t.Errorf("increment: %s", r)
						return
					}
				}
				acked.Add(1)
			}
		})
	}
	var reads, bad atomic.Int64
	readsDone := make(chan struct{})
	go func() {
		defer close(readsDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			lo := acked.Load()
			got := getCounter(t, id, "strong").Count
			hi := sent.Load()
			reads.Add(1)
			if got < lo || got > hi {
				bad.Add(1)
				t.Errorf("strong read %d outside [%d acknowledged, %d sent]", got, lo, hi)
			}
		}
	}()

	time.Sleep(time.Second)
	if r := reshard(t, id, 50); r.PreviousNumShards != 1 || r.NumShards != 50 || r.MergeUntil != "" {
		t.Errorf("grow: %+v", r)
	}
	// Instances pick the new count up within SHARD_COUNT_CACHE (2 s here).
	time.Sleep(4 * time.Second)
	if used := shardIDs(t, id); len(used) < 10 {
		t.Errorf("after growing to 50, increments landed on %d shards: %v", len(used), used)
	}
	shrink := reshard(t, id, 3)
	if shrink.PreviousNumShards != 50 || shrink.NumShards != 3 || shrink.MergeUntil == "" || shrink.ShardsMerged < 10 {
		t.Errorf("shrink: %+v", shrink)
	}
	// A second reshard while the shrink merges is refused, and says until when.
	r := testenv.Do(t, "POST", url("reshardCounter"), fmt.Sprintf(`{"counter_id":%q,"num_shards":7}`, id))
	if r.Status != http.StatusConflict || r.ErrorCode() != "FAILED_PRECONDITION" || r.Header.Get("Retry-After") == "" {
		t.Errorf("reshard during a merge: %s", r)
	}

	// The roll-up merges once more after merge_until; wait until it says so.
	var state getResp
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		rr := testenv.Do(t, "GET", url("getCounter")+"?counter_id="+id, "")
		var body struct {
			Reshard *struct {
				From, To int
				Merging  bool
				MergedAt string `json:"merged_at"`
			}
		}
		rr.Decode(t, &body)
		rr.Decode(t, &state)
		if body.Reshard != nil && !body.Reshard.Merging && body.Reshard.MergedAt != "" && body.Reshard.To == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the merge did not report done within 30 s: %s", rr)
		}
	}
	if used := shardIDs(t, id); len(used) == 0 || used[len(used)-1] >= 3 {
		t.Errorf("the merge reports done, but shards %v remain (want only 0..2)", used)
	}
	close(stop)
	workers.Wait()
	<-readsDone
	if got := getCounter(t, id, "strong").Count; got != acked.Load() {
		t.Errorf("final strong read %d, acknowledged %d", got, acked.Load())
	}
	if used := shardIDs(t, id); used[len(used)-1] >= 3 {
		t.Errorf("increments after the merge landed on shards %v", used)
	}
	t.Logf("%d increments, %d strong reads in bounds (%d not), %d shards merged at once, num_shards %d", acked.Load(), reads.Load(), bad.Load(), shrink.ShardsMerged, state.NumShards)
}

// TestReshardQuietCounterFinishesOnReconcile: a counter nobody writes to
// after a shrink has no roll-up to finish the merge; reconcile does.
func TestReshardQuietCounterFinishesOnReconcile(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createCounter(t, id, 20)
	incrementMany(t, id, 200, 8, 0)
	want := getCounter(t, id, "strong").Count
	r := reshard(t, id, 2)
	until, err := time.Parse(time.RFC3339Nano, r.MergeUntil)
	if err != nil {
		t.Fatal(err)
	}
	if got := getCounter(t, id, "strong").Count; got != want {
		t.Errorf("strong read after the first merge: %d, want %d", got, want)
	}
	time.Sleep(time.Until(until) + 100*time.Millisecond)
	if rr := testenv.Do(t, "POST", url("reconcileCounters"), fmt.Sprintf(`{"counter_id":%q}`, id)); rr.Status != http.StatusOK {
		t.Fatal(rr)
	}
	if used := shardIDs(t, id); len(used) == 0 || used[len(used)-1] >= 2 {
		t.Errorf("after reconcile, shards %v remain", used)
	}
	e := getCounter(t, id, "eventual")
	if e.Count != want || e.NumShards != 2 {
		t.Errorf("eventual read %+v, want count %d on 2 shards", e, want)
	}
	// Growing is allowed again once the merge is done.
	if g := reshard(t, id, 4); g.NumShards != 4 || g.PreviousNumShards != 2 {
		t.Errorf("grow after the merge: %+v", g)
	}
}

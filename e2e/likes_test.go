package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// users creates n users in the Auth emulator and returns their
// Authorization headers, by uid.
func users(t *testing.T, prefix string, n int) map[string]string {
	t.Helper()
	out := make(map[string]string, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		uid := fmt.Sprintf("%s-%d", prefix, i)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			testenv.CreateUser(t, project, uid)
			mu.Lock()
			out[uid] = "Bearer " + testenv.ValidIDToken(project, uid)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

type likeResp struct {
	Delta   int64 `json:"delta"`
	Shard   *int  `json:"shard"`
	Member  *bool `json:"member"`
	Changed *bool `json:"changed"`
}

func createUnique(t *testing.T, id string, shards int) {
	t.Helper()
	r := testenv.Do(t, "POST", url("createCounter"), fmt.Sprintf(`{"counter_id":%q,"num_shards":%d,"unique":true}`, id, shards))
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"unique":true`) {
		t.Fatalf("create a unique counter: %s", r)
	}
}

// TestLikesAreExactUnderChaos: 1,000 users, each with a random sequence of
// likes and unlikes sent one after another, every one pressed twice at
// once (duplicates), some cancelled by an impatient client and then
// retried with their idempotency key until answered. At the end the strong
// read, the eventual read and the member documents all say the same: the
// users whose last action was a like.
func TestLikesAreExactUnderChaos(t *testing.T) {
	// Not parallel: it checks the eventual read within two cadences, which
	// other tests' events would delay.
	waitForQuietEvents(t)
	id := newCounterID(t)
	createUnique(t, id, 10)
	tokens := users(t, "liker-"+id, 1000)
	var (
		mu        sync.Mutex
		want      []string
		cancelled atomic.Int64
		wg        sync.WaitGroup
		sem       = make(chan struct{}, 64)
		impatient = &http.Client{Timeout: 2 * time.Millisecond}
	)
	for uid, bearer := range tokens {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			n := 1 + rand.IntN(5)
			like := false
			for a := range n {
				like = rand.IntN(2) == 0
				body := fmt.Sprintf(`{"counter_id":%q,"action_type":%q}`, id, map[bool]string{true: "increment", false: "decrement"}[like])
				key := fmt.Sprintf("%s-%d", uid, a)
				if rand.IntN(4) == 0 { // an impatient first try: outcome unknown
					req, _ := http.NewRequest("POST", url("incrementCounter"), strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", bearer)
					req.Header.Set("Idempotency-Key", key)
					if resp, err := impatient.Do(req); err == nil {
						resp.Body.Close()
					} else {
						cancelled.Add(1)
					}
				}
				// The press and its duplicate, at once, until both are answered.
				var pair sync.WaitGroup
				for range 2 {
					pair.Go(func() {
						for {
							r := testenv.Do(t, "POST", url("incrementCounter"), body, "Authorization", bearer, "Idempotency-Key", key)
							if r.Status == http.StatusOK {
								var lr likeResp
								r.Decode(t, &lr)
								if lr.Member == nil || *lr.Member != like {
									t.Errorf("%s: member %v after %s", uid, lr.Member, body)
								}
								return
							}
							if r.Status != http.StatusServiceUnavailable {
								t.Errorf("%s: %s", uid, r)
								return
							}
						}
					})
				}
				pair.Wait()
			}
			if like {
				mu.Lock()
				want = append(want, uid)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(want)
	if got := docIDs(t, testenv.Firestore(t, project).Collection("counters/"+id+"/members")); !slices.Equal(got, want) {
		t.Errorf("%d member documents, want the %d users whose last action was a like", len(got), len(want))
	}
	if got := getCounter(t, id, "strong").Count; got != int64(len(want)) {
		t.Errorf("strong read %d, want %d", got, len(want))
	}
	if got, _ := waitEventual(t, id, int64(len(want)), time.Now().Add(2*cadence+time.Second)); got != int64(len(want)) {
		t.Errorf("eventual read %d within 2 cadences, want %d", got, len(want))
	}
	// Reconcile's audit finds nothing to correct.
	r := testenv.Do(t, "POST", url("reconcileCounters"), fmt.Sprintf(`{"counter_id":%q}`, id))
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"audit_corrected":0`) {
		t.Errorf("reconcile: %s", r)
	}
	t.Logf("%d users, %d liking at the end, %d impatient tries cancelled", len(tokens), len(want), cancelled.Load())
}

// TestSameUserThroughTwoInstances: the same user likes through two
// instances at once, then unlikes through both: one change each time.
func TestSameUserThroughTwoInstances(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createUnique(t, id, 4)
	other := secondInstance(t)
	bearer := users(t, "twice-"+id, 1)["twice-"+id+"-0"]
	for round, action := range []string{"increment", "decrement", "increment"} {
		var changed atomic.Int64
		var wg sync.WaitGroup
		for _, base := range []string{url(""), other + "/"} {
			for range 4 {
				wg.Go(func() {
					r := testenv.Do(t, "POST", base+"incrementCounter", fmt.Sprintf(`{"counter_id":%q,"action_type":%q}`, id, action), "Authorization", bearer)
					var lr likeResp
					r.Decode(t, &lr)
					if r.Status != http.StatusOK {
						t.Errorf("%s: %s", action, r)
					} else if *lr.Changed {
						changed.Add(1)
					}
				})
			}
		}
		wg.Wait()
		want := int64(1 - round%2)
		if changed.Load() != 1 {
			t.Errorf("round %d (%s): %d answers changed, want exactly 1", round, action, changed.Load())
		}
		if got := getCounter(t, id, "strong").Count; got != want {
			t.Errorf("round %d (%s): count %d, want %d", round, action, got, want)
		}
	}
}

// TestIncrementsMixUniqueAndPlain: one request of items on a unique and a
// plain counter, the same user twice, in arrival order.
func TestIncrementsMixUniqueAndPlain(t *testing.T) {
	t.Parallel()
	likes, views := newCounterID(t), newCounterID(t)
	createUnique(t, likes, 2)
	createCounter(t, views, 2)
	bearer := users(t, "mixer-"+likes, 1)["mixer-"+likes+"-0"]
	body := fmt.Sprintf(`{"increments":[
		{"counter_id":%[1]q},
		{"counter_id":%[1]q,"delta":1},
		{"counter_id":%[2]q,"delta":3},
		{"counter_id":%[1]q,"delta":-1},
		{"counter_id":%[1]q,"delta":2},
		{"counter_id":%[1]q,"action_type":"increment"}]}`, likes, views)
	r := testenv.Do(t, "POST", url("incrementCounter"), body, "Authorization", bearer)
	var list struct {
		Results []struct {
			Status int `json:"status"`
			likeResp
			Error *struct{ Code, Message string }
		}
	}
	r.Decode(t, &list)
	if r.Status != http.StatusOK || len(list.Results) != 6 {
		t.Fatalf("%s", r)
	}
	type want struct {
		status          int
		member, changed bool
	}
	for i, w := range []want{{200, true, true}, {200, true, false}, {200, false, false}, {200, false, true}, {400, false, false}, {200, true, true}} {
		got := list.Results[i]
		switch {
		case got.Status != w.status:
			t.Errorf("item %d: %+v, want status %d", i, got, w.status)
		case i == 2 && (got.Member != nil || got.Delta != 3):
			t.Errorf("the plain item: %+v", got)
		case w.status == 200 && i != 2 && (*got.Member != w.member || *got.Changed != w.changed):
			t.Errorf("item %d: member %v changed %v, want %v %v", i, *got.Member, *got.Changed, w.member, w.changed)
		case w.status == 400 && !strings.Contains(got.Error.Message, "increments[4].delta"):
			t.Errorf("item 4: %+v, want a 400 naming increments[4].delta", got.Error)
		}
	}
	if got := getCounter(t, likes, "strong").Count; got != 1 {
		t.Errorf("likes = %d, want 1", got)
	}
	if got := getCounter(t, views, "strong").Count; got != 3 {
		t.Errorf("views = %d, want 3", got)
	}
	// Did I like it? The eventual read tells a signed-in caller.
	r = testenv.Do(t, "GET", url("getCounter")+"?counter_id="+likes, "", "Authorization", bearer)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"member":true`) || !strings.Contains(string(r.Body), `"unique":true`) {
		t.Errorf("getCounter of a liked counter: %s", r)
	}
	// Without a token (AUTH=off) a unique counter does not know who you are.
	r = testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, likes))
	if r.Status != http.StatusUnauthorized || r.ErrorCode() != "UNAUTHENTICATED" {
		t.Errorf("an anonymous like: %s, want 401", r)
	}
}

// TestAuditCorrectsTheShardsToTheMembers: a member document written by
// hand, without its +1: reconcile's audit counts the members at the
// shards' read time, reports the drift, and corrects the shards.
func TestAuditCorrectsTheShardsToTheMembers(t *testing.T) {
	t.Parallel()
	id := newCounterID(t)
	createUnique(t, id, 3)
	for uid, bearer := range users(t, "audited-"+id, 3) {
		if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q}`, id), "Authorization", bearer); r.Status != http.StatusOK {
			t.Fatalf("%s: %s", uid, r)
		}
	}
	if _, err := testenv.Firestore(t, project).Doc("counters/"+id+"/members/intruder").Set(context.Background(), map[string]any{"joined_at": time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := testenv.Do(t, "POST", url("reconcileCounters"), fmt.Sprintf(`{"counter_id":%q}`, id))
	var rec struct {
		Audited int   `json:"audit_corrected"`
		Drift   int64 `json:"audit_drift"`
	}
	r.Decode(t, &rec)
	if r.Status != http.StatusOK || rec.Audited != 1 || rec.Drift != 1 {
		t.Fatalf("reconcile: %s, want one counter corrected by +1", r)
	}
	if got := getCounter(t, id, "strong").Count; got != 4 {
		t.Errorf("strong read %d after the audit, want the 4 members", got)
	}
	if len(logs.Await(map[string]any{"counter_id": id, "severity": "ERROR", "drift": float64(1)})) == 0 {
		t.Errorf("the audit's correction was not logged")
	}
}

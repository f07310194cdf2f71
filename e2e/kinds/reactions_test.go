package kinds

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// reactionChoices are the choices of the reactions kind of TestMain.
var reactionChoices = []string{"like", "love", "haha", "wow", "sad", "angry"}

// answer is an incrementCounter answer on a choice counter.
type answer struct {
	Choice, Previous string
	Changed          bool
	Replayed         bool
}

// react sets (or, with "", removes) a user's reaction, with an optional
// idempotency key.
func react(t *testing.T, token, id, choice, key string) (testenv.Response, answer) {
	t.Helper()
	body := fmt.Sprintf(`{"counter_id":%q,"choice":%q}`, id, choice)
	if key != "" {
		body = fmt.Sprintf(`{"counter_id":%q,"choice":%q,"idempotency_key":%q}`, id, choice, key)
	}
	r := call(t, token, "POST", "incrementCounter", body)
	var a answer
	if r.Status == http.StatusOK {
		r.Decode(t, &a)
	}
	return r, a
}

// reactionCounts are a choice counter's count and counts as getCounter
// answers them.
type reactionCounts struct {
	Count  int64
	Counts map[string]int64
}

// TestTwelveUsersSwitchReactionsFromTwoDevices: each user taps reactions
// on two devices at once, without waiting, some taps retried with their
// key. Every answer fits one order of that user's taps, and the counts of
// a strong read, and of an eventual one after reconcile, are the choices
// of the member documents: nobody is counted under two reactions.
func TestTwelveUsersSwitchReactionsFromTwoDevices(t *testing.T) {
	id := "reactions:post-" + run
	const users, devices, taps = 12, 2, 8
	var mu sync.Mutex
	answers := map[string][]answer{} // by user, each first answer of a tap
	var wg sync.WaitGroup
	for u := range users {
		name := fmt.Sprintf("reactor%d", u)
		token := user(t, name)
		for d := range devices {
			rng := rand.New(rand.NewPCG(uint64(u), uint64(d)))
			for k := range taps {
				choice := ""
				if rng.IntN(5) > 0 {
					choice = reactionChoices[rng.IntN(len(reactionChoices))]
				}
				key := ""
				if k%2 == 0 {
					key = fmt.Sprintf("tap-%d-%d-%d", u, d, k)
				}
				wg.Go(func() {
					r, a := react(t, token, id, choice, key)
					if r.Status != http.StatusOK || a.Choice != choice {
						t.Errorf("%s taps %q: %s", name, choice, r)
						return
					}
					mine := []answer{a}
					if key != "" {
						// The app retries the tap: the same outcome again; but a
						// removal that found no reaction on a counter's first use
						// writes nothing, its key's record neither (api.md), so
						// its retry is a new tap when the other device reacted
						// meanwhile.
						r2, again := react(t, token, id, choice, key)
						again.Replayed, a.Replayed = false, false
						firstUseNoop := choice == "" && !a.Changed
						switch {
						case r2.Status != http.StatusOK:
							t.Errorf("%s's retry of %q: %s", name, key, r2)
						case again != a && firstUseNoop:
							mine = append(mine, again)
						case again != a:
							t.Errorf("%s's retry of %q: %s, want %+v again", name, key, r2, a)
						}
					}
					mu.Lock()
					answers[name] = append(answers[name], mine...)
					mu.Unlock()
				})
			}
		}
	}
	wg.Wait()

	// The member documents: each user's choice, if any.
	members := map[string]string{}
	docs, err := testenv.Firestore(t, project).Collection("counters/" + id + "/members").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	tally := map[string]int64{}
	for _, d := range docs {
		choice, _ := d.Data()["choice"].(string)
		members[strings.TrimSuffix(d.Ref.ID, "-"+run)] = choice
		tally[choice]++
	}
	for name, as := range answers {
		if err := fitsOneOrder(as, members[name]); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	backend := admin(t)
	var got reactionCounts
	call(t, backend, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &got)
	want := reactionCounts{Count: int64(len(docs)), Counts: map[string]int64{}}
	for _, c := range reactionChoices {
		want.Counts[c] = tally[c]
	}
	if got.Count != want.Count || !maps.Equal(got.Counts, want.Counts) {
		t.Errorf("strong read %+v, want the member documents' %+v", got, want)
	}
	if r := testenv.Do(t, "POST", base+"/reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatalf("reconcile: %s", r)
	}
	var eventual reactionCounts
	call(t, backend, "GET", "getCounter", "?counter_id="+id).Decode(t, &eventual)
	if eventual.Count != want.Count || !maps.Equal(eventual.Counts, want.Counts) {
		t.Errorf("eventual read after reconcile %+v, want %+v", eventual, want)
	}
}

// fitsOneOrder checks that a user's answers fit one serial order of their
// taps, from no reaction to final: each reaction is entered as often as it
// is left, but the final one once more, and "" (none) once less.
func fitsOneOrder(as []answer, final string) error {
	balance := map[string]int{"": 1}
	balance[final]--
	for _, a := range as {
		switch {
		case a.Changed && a.Choice == a.Previous, !a.Changed && a.Choice != a.Previous:
			return fmt.Errorf("answer %+v: changed says otherwise", a)
		case a.Changed:
			balance[a.Previous]--
			balance[a.Choice]++
		}
	}
	for choice, n := range balance {
		if n != 0 {
			return fmt.Errorf("answers %+v ending on %q: %q is entered %+d times more than left", as, final, choice, n)
		}
	}
	return nil
}

// TestChoicesAreChecked: a choice the kind does not declare is 400 naming
// it; a choice on a kind without choices, a delta on a choice counter, and
// a key used again with another choice are refused; "" removes.
func TestChoicesAreChecked(t *testing.T) {
	id := "reactions:checked-" + run
	ivy := user(t, "ivy")
	for _, tc := range []struct{ body, want string }{
		{fmt.Sprintf(`{"counter_id":%q,"choice":"meh"}`, id), `meh\" is not a choice`},
		{fmt.Sprintf(`{"counter_id":"likes:c-%s","choice":"love"}`, run), "has no choices"},
		{fmt.Sprintf(`{"counter_id":%q}`, id), "choice is required"},
		{fmt.Sprintf(`{"counter_id":%q,"choice":"love","delta":1}`, id), "exclusive"},
	} {
		if r := call(t, ivy, "POST", "incrementCounter", tc.body); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("%s: %s, want 400 saying %q", tc.body, r, tc.want)
		}
	}
	if r, a := react(t, ivy, id, "love", "k1"); r.Status != http.StatusOK || a != (answer{Choice: "love", Changed: true}) {
		t.Fatalf("ivy loves: %s", r)
	}
	if r, _ := react(t, ivy, id, "wow", "k1"); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), `choice \"love\"`) {
		t.Errorf("the key again with another choice: %s, want 409 naming the first", r)
	}
	if r, a := react(t, ivy, id, "", ""); r.Status != http.StatusOK || a != (answer{Previous: "love", Changed: true}) {
		t.Errorf("ivy removes her reaction: %s", r)
	}
	var got reactionCounts
	call(t, ivy, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &got)
	if got.Count != 0 || got.Counts["love"] != 0 || len(got.Counts) != len(reactionChoices) {
		t.Errorf("after the removal: %+v, want 0 of each", got)
	}
}

// TestReactionsOfAnErasedUserGo: an admin sets a reaction for a member,
// and eraseMember takes it away with the count of its choice.
func TestReactionsOfAnErasedUserGo(t *testing.T) {
	t.Parallel() // its erasure waits out its last pass (ERASURE_CHECK + 4 × FIRESTORE_DEADLINE + 1 s): the others wait beside it
	id := "reactions:erased-" + run
	jay, backend := user(t, "jay"), admin(t)
	uid := "jay-" + run
	if r, _ := react(t, jay, id, "haha", ""); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	r := call(t, backend, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"choice":"sad","member":%q}`, id, uid))
	if !strings.Contains(string(r.Body), `"previous":"haha"`) {
		t.Errorf("the backend switches jay to sad: %s", r)
	}
	var got reactionCounts
	call(t, jay, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &got)
	if got.Count != 1 || got.Counts["sad"] != 1 || got.Counts["haha"] != 0 {
		t.Errorf("after the switch: %+v", got)
	}
	var m struct {
		Members []struct{ UID, Choice string }
	}
	call(t, backend, "GET", "listMembers", "?counter_id="+id).Decode(t, &m)
	if len(m.Members) != 1 || m.Members[0].UID != uid || m.Members[0].Choice != "sad" {
		t.Errorf("who reacted what: %+v, want jay's sad", m.Members)
	}
	if n, _ := erase(t, backend, uid); n != 1 {
		t.Fatalf("erase jay: %d counters, want 1", n)
	}
	call(t, backend, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &got)
	if got.Count != 0 || got.Counts["sad"] != 0 {
		t.Errorf("after jay's erasure: %+v, want none", got)
	}
}

// TestTheGoClientReacts: a user's reaction through the Go client, then
// the backend's for them.
func TestTheGoClientReacts(t *testing.T) {
	ctx := context.Background()
	id, uid := "reactions:go-"+run, "kim-"+run
	testenv.CreateUser(t, project, uid)
	kim, backend := goClient(t, uid), goClient(t, "backend-go-r-"+run)
	if r, err := kim.React(ctx, id, "wow"); err != nil || r.Choice == nil || *r.Choice != "wow" || *r.Previous != "" {
		t.Fatalf("kim reacts: %+v, %v", r, err)
	}
	if r, err := backend.ReactFor(ctx, id, uid, "love"); err != nil || *r.Choice != "love" || *r.Previous != "wow" {
		t.Fatalf("the backend switches kim: %+v, %v", r, err)
	}
	got, err := kim.Get(ctx, id, true)
	if err != nil || got.Count != 1 || got.Counts["love"] != 1 || got.Counts["wow"] != 0 || got.Choice == nil || *got.Choice != "love" {
		t.Errorf("kim reads %+v, %v; want 1, love", got, err)
	}
}

// TestTheAuditCorrectsAChoice: a member document deleted outside the
// functions leaves the shards counting its reaction; reconcile's audit
// brings the count and the choice's count back to the member documents.
func TestTheAuditCorrectsAChoice(t *testing.T) {
	id := "reactions:audit-" + run
	mo := user(t, "mo")
	if r, _ := react(t, mo, id, "love", ""); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if _, err := testenv.Firestore(t, project).Doc("counters/" + id + "/members/mo-" + run).Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := testenv.Do(t, "POST", base+"/reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"audit_drift":-1`) {
		t.Fatalf("reconcile: %s, want an audit drift of -1", r)
	}
	var got reactionCounts
	call(t, mo, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &got)
	if got.Count != 0 || got.Counts["love"] != 0 {
		t.Errorf("after the audit: %+v, want no one, no love", got)
	}
}

package kinds

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdminInputIsNeverA500: what an admin (or anyone) sends that names a
// path, a time or a size past Firestore's limits is a short 400, never a
// 5xx nor a false answer.
func TestAdminInputIsNeverA500(t *testing.T) {
	t.Parallel() // its erasure waits out its last pass (ERASURE_CHECK + 4 × FIRESTORE_DEADLINE + 1 s): the others wait beside it
	backend, uid := admin(t), "ida-"+run
	like := "likes:ida-" + run
	if r := call(t, backend, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"member":%q}`, like, uid)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	now := time.Now().UTC()
	stamp := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	for name, token := range map[string]string{
		"a time to come, complete at once before": "9999-12-31T23:59:59Z true 0001-01-01T00:00:00Z ",
		"a path up and out":                       stamp(now) + " false " + stamp(now) + " counters/../members/" + uid,
		"a reserved id":                           stamp(now) + " false " + stamp(now) + " counters/__x__/members/" + uid,
		"an erasure that never began":             stamp(now.Add(-time.Minute)) + " true " + stamp(now) + " ",
		"not a token":                             strings.Repeat("x", 10_000),
	} {
		r := call(t, backend, "POST", "eraseMember", fmt.Sprintf(`{"uid":%q,"page_token":%q}`, uid, token))
		if r.Status != http.StatusBadRequest || len(r.Body) > 1000 {
			t.Errorf("eraseMember with %s: %d %.300s", name, r.Status, r.Body)
		}
	}
	if n := strong(t, backend, like); n != 1 {
		t.Errorf("%s after the refused tokens: %d, want 1", like, n)
	}
	// A page token of the erasure under way goes on; it still erases.
	if erased, _ := erase(t, backend, uid); erased != 1 {
		t.Errorf("the erasure: %d counters, want 1", erased)
	}

	if r := call(t, backend, "GET", "listCounters", "?owner="+strings.Repeat("o", 2000)); r.Status != http.StatusBadRequest || len(r.Body) > 1000 {
		t.Errorf("listCounters with a 2,000-byte owner: %d %.300s", r.Status, r.Body)
	}
	for name, c := range map[string]struct{ method, fn, input string }{
		"a 900 KB choice":         {"POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"reactions:ida-%s","choice":%q}`, run, strings.Repeat("c", 900_000))},
		"a 60,000-character kind": {"GET", "topCounters", "?window=hour&kind=" + strings.Repeat("k", 60_000)},
		"a 100,000-character id":  {"POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, strings.Repeat("i", 100_000))},
	} {
		if r := call(t, backend, c.method, c.fn, c.input); r.Status != http.StatusBadRequest || len(r.Body) > 1000 {
			t.Errorf("%s with %s: %d, %d bytes: %.300s", c.fn, name, r.Status, len(r.Body), r.Body)
		}
	}
	// An item's error names its place and its field.
	user := user(t, "ida-user")
	r := call(t, user, "POST", "incrementCounter", fmt.Sprintf(`{"increments":[{"counter_id":%q,"member":"someone"}]}`, like))
	if !strings.Contains(string(r.Body), "increments[0].member: only admins") {
		t.Errorf("a user's item naming a member: %d %s", r.Status, r.Body)
	}
}

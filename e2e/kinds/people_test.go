package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"

	"github.com/shardcount/shardcount/client"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// strong is a counter's exact count.
func strong(t *testing.T, token, id string) int64 {
	t.Helper()
	var got struct{ Count int64 }
	call(t, token, "GET", "getCounter", "?consistency=strong&counter_id="+id).Decode(t, &got)
	return got.Count
}

// TestAViewerCannotUnview: a join-only kind's members stay (27 → 26 was
// a viewer taking their view back); an admin may still remove one.
func TestAViewerCannotUnview(t *testing.T) {
	id := "viewers:v-" + run
	erin, backend := user(t, "erin-viewer"), admin(t)
	if r := call(t, erin, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if r := call(t, erin, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1}`, id)); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "join-only") {
		t.Errorf("a viewer's un-view: %s, want 403", r)
	}
	if n := strong(t, backend, id); n != 1 {
		t.Errorf("viewers after a refused un-view: %d, want 1", n)
	}
	r := call(t, backend, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1,"member":"erin-viewer-%s"}`, id, run))
	var out struct{ Member, Changed bool }
	r.Decode(t, &out)
	if r.Status != http.StatusOK || out.Member || !out.Changed || strong(t, backend, id) != 0 {
		t.Errorf("the backend removes the viewer: %s, want removed", r)
	}
}

// TestTheBackendActsForAMember: an admin likes and unlikes for a user
// (their member document is the one changed); an end user's member is 403.
func TestTheBackendActsForAMember(t *testing.T) {
	id := "likes:for-" + run
	frank, backend := user(t, "frank"), admin(t)
	uid := "frank-" + run
	like := func(token string, delta int, member string) testenv.Response {
		return call(t, token, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":%d,"member":%q}`, id, delta, member))
	}
	if r := like(backend, 1, uid); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"changed":true`) {
		t.Fatalf("the backend likes for frank: %s", r)
	}
	// frank sees it as his own like: his like again changes nothing.
	if r := call(t, frank, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); !strings.Contains(string(r.Body), `"changed":false`) {
		t.Errorf("frank's own like after the backend's: %s, want no change", r)
	}
	if r := like(frank, 1, "someone-else"); r.Status != http.StatusForbidden {
		t.Errorf("an end user's member: %s, want 403", r)
	}
	if r := call(t, backend, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"views:for-%s","member":%q}`, run, uid)); r.Status != http.StatusBadRequest {
		t.Errorf("member on a plain counter: %s, want 400", r)
	}
	if r := like(backend, -1, uid); r.Status != http.StatusOK || strong(t, backend, id) != 0 {
		t.Errorf("the backend unlikes for frank: %s", r)
	}
	// A key the backend sends for frank is not frank's: his own use of it
	// first (an unlike, then a like again) does not answer the backend's.
	send := func(token, body string) testenv.Response {
		return call(t, token, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,%s}`, id, body))
	}
	send(frank, `"delta":-1,"idempotency_key":"mod-remove"`)
	send(frank, `"delta":1`)
	r := send(backend, fmt.Sprintf(`"delta":-1,"member":%q,"idempotency_key":"mod-remove"`, uid))
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"changed":true`) || strings.Contains(string(r.Body), "replayed") {
		t.Errorf("the backend's key, used by frank first: %s, want frank removed", r)
	}
	if r := call(t, backend, "POST", "incrementCounter", fmt.Sprintf(`{"member":%q,"increments":[{"counter_id":%q}]}`, uid, id)); r.Status != http.StatusBadRequest {
		t.Errorf("member beside increments: %s, want 400", r)
	}
}

// TestEraseMember removes a user from every unique counter, each count
// down by exactly one, past more than a page of memberships and past a
// document of the app's own named members, and a second erasure changes
// nothing.
func TestEraseMember(t *testing.T) {
	t.Parallel() // its erasure waits out its last pass (ERASURE_CHECK + 4 × FIRESTORE_DEADLINE + 1 s): the others wait beside it
	gina, other, backend := user(t, "gina"), user(t, "gina-friend"), admin(t)
	uid := "gina-" + run
	ids := []string{"likes:e1-" + run, "likes:e2-" + run, "viewers:e3-" + run}
	for _, id := range ids {
		for _, tok := range []string{gina, other} {
			if r := call(t, tok, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
				t.Fatal(r)
			}
		}
	}
	// 110 more, liked for her by the backend in one request, and a group
	// of the app's own that lists her under members.
	var items []string
	for i := range 110 {
		items = append(items, fmt.Sprintf(`{"counter_id":"likes:bulk-%d-%s","member":%q}`, i, run, uid))
	}
	if r := call(t, backend, "POST", "incrementCounter", `{"increments":[`+strings.Join(items, ",")+`]}`); r.Status != http.StatusOK || strings.Count(string(r.Body), `"status":200`) != 110 {
		t.Fatalf("110 likes for gina: %s", r)
	}
	if _, err := testenv.Firestore(t, project).Doc("groups/g-"+run+"/members/"+uid).Set(context.Background(), map[string]any{"uid": uid, "joined_at": time.Now()}); err != nil {
		t.Fatal(err)
	}
	if r := call(t, gina, "POST", "eraseMember", fmt.Sprintf(`{"uid":%q}`, uid)); r.Status != http.StatusForbidden {
		t.Errorf("a user's eraseMember: %s, want 403", r)
	}
	for pass, want := range []int{113, 0} {
		erased, skipped := erase(t, backend, uid)
		if erased != want || skipped < 1 {
			t.Errorf("erasure %d: %d counters, %d skipped; want %d and the app's own document skipped", pass+1, erased, skipped, want)
		}
	}
	for _, id := range ids {
		if n := strong(t, backend, id); n != 1 {
			t.Errorf("%s after gina's erasure: %d, want her friend's 1", id, n)
		}
		var m struct{ Members []struct{ UID string } }
		call(t, backend, "GET", "listMembers", "?counter_id="+id).Decode(t, &m)
		if len(m.Members) != 1 || m.Members[0].UID != "gina-friend-"+run {
			t.Errorf("%s's members after the erasure: %v", id, m.Members)
		}
	}
}

// erase erases uid as token (an admin) until complete, waiting as each
// call says: the counters it removed them from, and those it skipped.
func erase(t *testing.T, token, uid string) (erased, skipped int) {
	t.Helper()
	next := ""
	for calls := 0; ; calls++ {
		r := call(t, token, "POST", "eraseMember", fmt.Sprintf(`{"uid":%q,"page_token":%q}`, uid, next))
		var out struct {
			UID               string
			Counters, Skipped int
			Complete          bool
			NextPageToken     string `json:"next_page_token"`
			RetryAfter        int    `json:"retry_after_seconds"`
		}
		r.Decode(t, &out)
		if r.Status != http.StatusOK || out.UID != uid || calls == 10 {
			t.Fatalf("erasure, call %d: %s", calls+1, r)
		}
		erased, skipped, next = erased+out.Counters, skipped+out.Skipped, out.NextPageToken
		if out.Complete {
			return erased, skipped
		}
		time.Sleep(time.Duration(out.RetryAfter) * time.Second)
	}
}

// TestMyLikesByKind: member documents name their kind, so "my likes" is
// members where uid == mine and kind == "likes", newest first, under the
// rules; a viewer's membership is not among them.
func TestMyLikesByKind(t *testing.T) {
	hana := user(t, "hana")
	for _, id := range []string{"likes:m1-" + run, "viewers:m2-" + run, "likes:m3-" + run} {
		if r := call(t, hana, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	liked := membersQuery(t, hana, "hana-"+run, "likes")
	if len(liked) != 2 || liked[0] != "likes:m3-"+run || liked[1] != "likes:m1-"+run {
		t.Errorf("hana's likes, newest first: %v", liked)
	}
}

// membersQuery runs the app's query of a user's member documents (of a
// kind, when not ""), newest first, with the user's token under the
// rules, and returns their counters.
func membersQuery(t *testing.T, token, uid, kind string) []string {
	t.Helper()
	eq := func(field, v string) map[string]any {
		return map[string]any{"fieldFilter": map[string]any{"field": map[string]any{"fieldPath": field}, "op": "EQUAL", "value": map[string]any{"stringValue": v}}}
	}
	where := eq("uid", uid)
	if kind != "" {
		where = map[string]any{"compositeFilter": map[string]any{"op": "AND", "filters": []any{eq("uid", uid), eq("kind", kind)}}}
	}
	q := map[string]any{"structuredQuery": map[string]any{
		"from":    []any{map[string]any{"collectionId": "members", "allDescendants": true}},
		"where":   where,
		"orderBy": []any{map[string]any{"field": map[string]any{"fieldPath": "joined_at"}, "direction": "DESCENDING"}},
	}}
	body, _ := json.Marshal(q)
	host, _ := testenv.EmulatorHost()
	r := testenv.Do(t, "POST", "http://"+host+"/v1/projects/"+project+"/databases/"+testenv.Database()+"/documents:runQuery", string(body), "Authorization", "Bearer "+token)
	var results []struct {
		Document *struct {
			Fields map[string]struct {
				StringValue string `json:"stringValue"`
			} `json:"fields"`
		} `json:"document"`
	}
	r.Decode(t, &results)
	if r.Status != http.StatusOK {
		t.Fatalf("the query of %s's %s: %s", uid, kind, r)
	}
	var ids []string
	for _, res := range results {
		if res.Document != nil {
			ids = append(ids, res.Document.Fields["counter_id"].StringValue)
		}
	}
	return ids
}

// TestTheGoClientActsForAMemberAndErases: an app's backend, with the Go
// client as its service identity, likes for a user and then erases them.
func TestTheGoClientActsForAMemberAndErases(t *testing.T) {
	t.Parallel() // its erasure waits out its last pass (ERASURE_CHECK + 4 × FIRESTORE_DEADLINE + 1 s): the others wait beside it
	ctx := context.Background()
	backend := goClient(t, "backend-go-"+run)
	uid, id := "go-member-"+run, "likes:go-"+run
	liked, err := backend.LikeFor(ctx, id, uid, true)
	if err != nil || liked.Changed == nil || !*liked.Changed {
		t.Fatalf("LikeFor: %+v, %v", liked, err)
	}
	n, err := backend.EraseMember(ctx, uid)
	if err != nil || n != 1 {
		t.Errorf("EraseMember: %d counters, %v; want 1", n, err)
	}
	if got, err := backend.Get(ctx, id, true); err != nil || got.Count != 0 {
		t.Errorf("the counter after the erasure: %+v, %v", got, err)
	}
}

// goClient is the Go client of the functions under test, signed in as
// uid (custom tokens of the Auth emulator, through the Admin SDK).
func goClient(t *testing.T, uid string) *client.Client {
	t.Helper()
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: project})
	if err != nil {
		t.Fatal(err)
	}
	authClient, err := app.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return client.New(base, "demo-api-key", uid, authClient)
}

// TestMembersOfBeforeGetTheirKind: member documents written before they
// named their kind are left out of "my likes" by kind, and those of the
// first versions, without uid and counter_id, of a reader's state in
// getCounters too; reconcile (the scheduled runs and the full audit)
// writes what they lack, a page a run, and marks the counter done.
func TestMembersOfBeforeGetTheirKind(t *testing.T) {
	id, fs, ctx := "likes:before-"+run, testenv.Firestore(t, project), context.Background()
	var uids, tokens []string
	for i := range 3 {
		tok := user(t, fmt.Sprint("old-liker-", i))
		tokens = append(tokens, tok)
		uids = append(uids, fmt.Sprintf("old-liker-%d-%s", i, run))
		if r := call(t, tok, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	// As the versions before wrote them: no kind (the first versions: no
	// uid nor counter_id either), and a counter not marked.
	for i, uid := range uids {
		lacks := []firestore.Update{{Path: "kind", Value: firestore.Delete}}
		if i == 0 {
			lacks = append(lacks, firestore.Update{Path: "uid", Value: firestore.Delete}, firestore.Update{Path: "counter_id", Value: firestore.Delete})
		}
		if _, err := fs.Doc("counters/"+id+"/members/"+uid).Update(ctx, lacks); err != nil {
			t.Fatal(err)
		}
	}
	if rows, _ := feed(t, tokens[0], fmt.Sprintf(`{"counter_ids":[%q]}`, id)); rows[id].Member == nil || *rows[id].Member {
		t.Fatalf("a member document of the first versions in getCounters: %+v, want member false (its query cannot find it)", rows[id])
	}
	if _, err := fs.Doc("counters/"+id).Update(ctx, []firestore.Update{{Path: "member_kinds", Value: firestore.Delete}}); err != nil {
		t.Fatal(err)
	}
	if got := membersQuery(t, tokens[0], uids[0], "likes"); slices.Contains(got, id) {
		t.Fatalf("a member document without its kind is among the likes by kind: %v", got)
	}
	if r := testenv.Do(t, "POST", base+"/reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatalf("reconcileCounters: %s", r)
	}
	for _, uid := range uids {
		snap, err := fs.Doc("counters/" + id + "/members/" + uid).Get(ctx)
		if err != nil || snap.Data()["kind"] != "likes" || snap.Data()["uid"] != uid || snap.Data()["counter_id"] != id {
			t.Errorf("%s's member document after reconcile: %v, %v", uid, snap.Data(), err)
		}
	}
	if rows, _ := feed(t, tokens[0], fmt.Sprintf(`{"counter_ids":[%q]}`, id)); rows[id].Member == nil || !*rows[id].Member {
		t.Errorf("old-liker-0 in getCounters after reconcile: %+v, want member true", rows[id])
	}
	if snap, err := fs.Doc("counters/" + id).Get(ctx); err != nil || snap.Data()["member_kinds"] != true {
		t.Errorf("the counter after reconcile: member_kinds %v, %v", snap.Data()["member_kinds"], err)
	}
	if got := membersQuery(t, tokens[0], uids[0], "likes"); !slices.Contains(got, id) {
		t.Errorf("old-liker-0's likes by kind after reconcile: %v", got)
	}

	// A counter of no kind (createCounter's) of the first versions too.
	mine := "before-" + run
	if r := call(t, admin(t), "POST", "createCounter", fmt.Sprintf(`{"counter_id":%q,"unique":true}`, mine)); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	if r := call(t, tokens[0], "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, mine)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if _, err := fs.Doc("counters/"+mine+"/members/"+uids[0]).Update(ctx, []firestore.Update{{Path: "uid", Value: firestore.Delete}, {Path: "counter_id", Value: firestore.Delete}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Doc("counters/"+mine).Update(ctx, []firestore.Update{{Path: "member_kinds", Value: firestore.Delete}}); err != nil {
		t.Fatal(err)
	}
	rollUp(t, mine)
	if snap, err := fs.Doc("counters/" + mine + "/members/" + uids[0]).Get(ctx); err != nil || snap.Data()["uid"] != uids[0] || snap.Data()["counter_id"] != mine || snap.Data()["kind"] != nil {
		t.Errorf("a member document of a counter of no kind after reconcile: %v, %v; want its uid and counter, no kind", snap.Data(), err)
	}
}

// TestErasingOverAnOrphan: a member document whose counter's document was
// deleted by hand is deleted by the erasure, and the counter is not
// created again at −1: of a kind's counter, and of one createCounter made
// (whose member document was left, before, as if a purge would come).
func TestErasingOverAnOrphan(t *testing.T) {
	t.Parallel() // its erasure waits out its last pass (ERASURE_CHECK + 4 × FIRESTORE_DEADLINE + 1 s): the others wait beside it
	owner, backend := user(t, "orphan-owner"), admin(t)
	uid, ids := "orphan-owner-"+run, []string{"likes:orphaned-" + run, "orphaned-" + run}
	if r := call(t, backend, "POST", "createCounter", fmt.Sprintf(`{"counter_id":%q,"unique":true}`, ids[1])); r.Status != http.StatusCreated {
		t.Fatal(r)
	}
	fs := testenv.Firestore(t, project)
	for _, id := range ids {
		if r := call(t, owner, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
		if _, err := fs.Doc("counters/" + id).Delete(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	erase(t, backend, uid)
	for _, id := range ids {
		if snap, err := fs.Doc("counters/" + id).Get(context.Background()); err == nil {
			t.Errorf("the erasure created %s again: %v", id, snap.Data())
		}
		if _, err := fs.Doc("counters/" + id + "/members/" + uid).Get(context.Background()); err == nil {
			t.Errorf("the orphan member document of %s is still there", id)
		}
	}
}

// Package kinds checks counters of kinds end to end, with AUTH=required as
// deployed (end users create no counters) and real users of the Auth
// emulator: a counter of a kind comes into being with its first like,
// nobody owns it, and a user's likes are one query under the rules.
package kinds

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

var base, project, run string

const unlimited = "call=0:1,create=0:1,increment=0:1,read=0:1,strong=0:1,reshard=0:1,reset=0:1,delete=0:1,list=0:1,top=0:1"

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	project = testenv.AuthProject()
	run = fmt.Sprint(time.Now().UnixNano() % 1e9)
	base = testenv.ServeFunctions(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "required",
		"COUNTER_KINDS":        `{"likes": {"unique": true, "num_shards": 4}, "views": {"num_shards": 2}, "viewers": {"unique": true, "join_only": true}, "reactions": {"choices": ["like", "love", "haha", "wow", "sad", "angry"]}, "watchers": {"distinct": true}, "hearts": {"unique": true, "keys_in": "posts", "mirror": "hearts"}, "votes": {"choices": ["up", "down"], "keys_in": "posts", "mirror": "votes"}}`,
		"RATE_LIMITS":          unlimited,
		"ADDRESS_RATE_LIMITS":  unlimited,
		"LOG_LEVEL":            "warn",
		// An erasure's last pass waits ERASURE_CHECK + 4 × FIRESTORE_DEADLINE
		// + 1 s: 22 s.
		"ERASURE_CHECK":      "1s",
		"FIRESTORE_DEADLINE": "5s",
	})
	os.Exit(m.Run())
}

// user is a signed-in user of the Auth emulator, with its ID token.
func user(t *testing.T, name string) string {
	t.Helper()
	uid := name + "-" + run
	testenv.CreateUser(t, project, uid)
	return testenv.ValidIDToken(project, uid)
}

// admin is the app's backend: a user with the custom claim admin: true.
func admin(t *testing.T) string {
	t.Helper()
	uid := fmt.Sprintf("backend-%s-%d", run, time.Now().UnixNano())
	testenv.CreateUser(t, project, uid)
	return testenv.AdminIDToken(project, uid)
}

// call calls a function with a token; a GET's arguments are its query.
func call(t *testing.T, token, method, fn, body string) testenv.Response {
	t.Helper()
	if method == http.MethodGet {
		return testenv.Do(t, method, base+"/"+fn+body, "", "Authorization", "Bearer "+token)
	}
	return testenv.Do(t, method, base+"/"+fn, body, "Authorization", "Bearer "+token)
}

func TestFirstLikesOfManyUsersAtOnce(t *testing.T) {
	// Thirty users like a post whose counter nobody created, all at once:
	// one commit creates it, every like counts, each user is a member.
	post := "likes:post-" + run
	const n = 30
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = user(t, fmt.Sprintf("liker%d", i))
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := call(t, tokens[i], "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":1}`, post))
			var out struct{ Changed, Member bool }
			r.Decode(t, &out)
			if r.Status != http.StatusOK || !out.Changed || !out.Member {
				t.Errorf("a first like: %s", r)
			}
		})
	}
	wg.Wait()
	var got struct {
		Count  int64
		Unique bool
	}
	r := call(t, tokens[0], "GET", "getCounter", "?consistency=strong&counter_id="+post)
	if r.Decode(t, &got); r.Status != http.StatusOK || got.Count != n || !got.Unique {
		t.Fatalf("after %d first likes: %s", n, r)
	}
	var page struct {
		Members []struct{ UID string } `json:"members"`
	}
	r = call(t, admin(t), "GET", "listMembers", "?limit=100&counter_id="+post)
	if r.Decode(t, &page); r.Status != http.StatusOK || len(page.Members) != n {
		t.Errorf("listMembers: %s", r)
	}
	if r := call(t, tokens[0], "GET", "listMembers", "?counter_id="+post); r.Status != http.StatusForbidden {
		t.Errorf("listMembers by a liker: %s", r)
	}
}

func TestAKindsCounterIsNobodys(t *testing.T) {
	post := "likes:owned-" + run
	alice := user(t, "alice")
	if r := call(t, alice, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":1}`, post)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	// Alice liked first; she did not create it, and owns nothing of it.
	for _, c := range []struct{ fn, body string }{
		{"deleteCounter", fmt.Sprintf(`{"counter_id":%q}`, post)},
		{"resetCounter", fmt.Sprintf(`{"counter_id":%q}`, post)},
		{"reshardCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":2}`, post)},
	} {
		if r := call(t, alice, "POST", c.fn, c.body); r.Status != http.StatusForbidden {
			t.Errorf("%s by the first liker: %s", c.fn, r)
		}
	}
	// An admin deletes it; a listener sees deleted: true.
	if r := call(t, admin(t), "POST", "deleteCounter", fmt.Sprintf(`{"counter_id":%q}`, post)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	snap, err := testenv.Firestore(t, project).Doc("counters/" + post).Get(t.Context())
	if err != nil || snap.Data()["deleted"] != true {
		t.Errorf("the deleted counter's document: %v %v", snap.Data(), err)
	}
	if r := call(t, alice, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":1}`, post)); r.Status != http.StatusNotFound {
		t.Errorf("a like of a deleted counter of a kind, before its id is free: %s", r)
	}
}

func TestOnlyAdminsCreate(t *testing.T) {
	bob := user(t, "bob")
	for _, id := range []string{"likes:p-" + run, "mine-" + run} {
		if r := call(t, bob, "POST", "createCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusForbidden {
			t.Errorf("an end user creates %s: %s", id, r)
		}
	}
	backend := admin(t)
	for _, own := range []string{`"unique":false`, `"num_shards":2`, `"followers_count":10`, `"post_type":"image"`, `"ranked":true`} {
		if r := call(t, backend, "POST", "createCounter", fmt.Sprintf(`{"counter_id":"likes:made-%s",%s}`, run, own)); r.Status != http.StatusBadRequest || !bytes.Contains(r.Body, []byte("send counter_id alone")) {
			t.Errorf("an admin's counter of a kind with %s of its own: %s", own, r)
		}
	}
	var made struct {
		Unique    bool `json:"unique"`
		NumShards int  `json:"num_shards"`
	}
	r := call(t, backend, "POST", "createCounter", fmt.Sprintf(`{"counter_id":"likes:made-%s"}`, run))
	if r.Decode(t, &made); r.Status != http.StatusCreated || !made.Unique || made.NumShards != 4 {
		t.Errorf("an admin creates a counter of a kind ahead of its first use: %s", r)
	}
}

func TestViewsGoUpForUsers(t *testing.T) {
	id := "views:page-" + run
	carol := user(t, "carol")
	if r := call(t, carol, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id)); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if r := call(t, carol, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1}`, id)); r.Status != http.StatusForbidden {
		t.Errorf("an end user's -1 on views: %s", r)
	}
	if r := call(t, admin(t), "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1}`, id)); r.Status != http.StatusOK {
		t.Errorf("an admin's -1 on views: %s", r)
	}
	var got struct{ Count int64 }
	r := call(t, carol, "GET", "getCounter", "?consistency=strong&counter_id=views:never-"+run)
	if r.Decode(t, &got); r.Status != http.StatusOK || got.Count != 0 {
		t.Errorf("a counter of a kind nobody used: %s", r)
	}
}

func TestAUsersLikesAreOneQuery(t *testing.T) {
	dave := user(t, "dave")
	for _, p := range []string{"a", "b", "c"} {
		if r := call(t, dave, "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":"likes:q%s-%s","delta":1}`, p, run)); r.Status != http.StatusOK {
			t.Fatal(r)
		}
	}
	// As the app does: the collection group members, uid == dave's, under
	// the project's rules, with dave's token.
	liked := membersQuery(t, dave, "dave-"+run, "")
	if len(liked) != 3 || liked[0] != "likes:qc-"+run {
		t.Errorf("dave's likes, newest first: %v", liked)
	}
}

// TestAnUnlikeOfANeverLikedPostCreatesNothing: an unlike (with its key)
// of a post nobody liked changes nothing and leaves no document behind.
func TestAnUnlikeOfANeverLikedPostCreatesNothing(t *testing.T) {
	post := "likes:never-" + run
	r := call(t, user(t, "unliker"), "POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":-1,"idempotency_key":"k1"}`, post))
	if r.Status != http.StatusOK || !bytes.Contains(r.Body, []byte(`"changed":false`)) {
		t.Fatalf("the unlike: %s", r)
	}
	if _, err := testenv.Firestore(t, project).Doc("counters/" + post).Get(t.Context()); err == nil {
		t.Error("after an unlike of a post nobody liked, its counter document exists")
	}
	if left := testenv.Dump(t, testenv.Firestore(t, project), "counters/"+post); len(left) != 0 {
		t.Errorf("documents under it: %v", left)
	}
}

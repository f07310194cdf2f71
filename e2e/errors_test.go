package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// TestBadRequestsChangeNothing sends every kind of bad request and checks
// the status, the error code, that the message names the field, and that the
// database is exactly as before.
func TestBadRequestsChangeNothing(t *testing.T) {
	id := newCounterID(t)
	createCounter(t, id, 4)
	if r := testenv.Do(t, "POST", url("incrementCounter"), fmt.Sprintf(`{"counter_id":%q,"delta":5}`, id), "Idempotency-Key", "first"); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	missing := id + "-missing"
	inc := func(fields string) string { return fmt.Sprintf(`{"counter_id":%q,%s}`, id, fields) }

	cases := []struct {
		name, method, function, query, body string
		headers                             []string
		status                              int
		code, mention                       string
	}{
		{"create: wrong method", "GET", "createCounter", "", "", nil, 405, "METHOD_NOT_ALLOWED", "POST"},
		{"create: exists", "POST", "createCounter", "", fmt.Sprintf(`{"counter_id":%q}`, id), nil, 409, "ALREADY_EXISTS", id},
		{"create: empty body", "POST", "createCounter", "", "", []string{"Content-Type", "application/json"}, 400, "INVALID_ARGUMENT", "body"},
		{"create: no content type", "POST", "createCounter", "", "", nil, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
		{"create: form body", "POST", "createCounter", "", "counter_id=x", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
		{"create: text body", "POST", "createCounter", "", `{"counter_id":"x0"}`, []string{"Content-Type", "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
		{"create: null body", "POST", "createCounter", "", `null`, nil, 400, "INVALID_ARGUMENT", "null"},
		{"create: duplicate key", "POST", "createCounter", "", `{"counter_id":"x8","counter_id":"x9"}`, nil, 400, "INVALID_ARGUMENT", "counter_id is given more than once"},
		{"create: field name case", "POST", "createCounter", "", `{"Counter_ID":"x10"}`, nil, 400, "INVALID_ARGUMENT", "Counter_ID is not a known field"},
		{"create: not JSON", "POST", "createCounter", "", `{"counter_id":`, nil, 400, "INVALID_ARGUMENT", "JSON"},
		{"create: array", "POST", "createCounter", "", `[1]`, nil, 400, "INVALID_ARGUMENT", "object"},
		{"create: unknown field", "POST", "createCounter", "", `{"counter_id":"x1","shards":3}`, nil, 400, "INVALID_ARGUMENT", "shards"},
		{"create: trailing data", "POST", "createCounter", "", `{"counter_id":"x2"} {}`, nil, 400, "INVALID_ARGUMENT", "JSON"},
		{"create: id wrong type", "POST", "createCounter", "", `{"counter_id":12}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"create: id too long", "POST", "createCounter", "", fmt.Sprintf(`{"counter_id":%q}`, strings.Repeat("a", 129)), nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"create: id with slash", "POST", "createCounter", "", `{"counter_id":"a/b"}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"create: id dot dot", "POST", "createCounter", "", `{"counter_id":".."}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"create: reserved id", "POST", "createCounter", "", `{"counter_id":"__x__"}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"create: empty id", "POST", "createCounter", "", `{"counter_id":""}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"create: zero shards", "POST", "createCounter", "", `{"counter_id":"x3","num_shards":0}`, nil, 400, "INVALID_ARGUMENT", "num_shards"},
		{"create: 1001 shards", "POST", "createCounter", "", `{"counter_id":"x4","num_shards":1001}`, nil, 400, "INVALID_ARGUMENT", "num_shards"},
		{"create: fractional shards", "POST", "createCounter", "", `{"counter_id":"x5","num_shards":2.5}`, nil, 400, "INVALID_ARGUMENT", "num_shards"},
		{"create: negative followers", "POST", "createCounter", "", `{"counter_id":"x6","followers_count":-1}`, nil, 400, "INVALID_ARGUMENT", "followers_count"},
		{"create: followers beyond int64", "POST", "createCounter", "", `{"counter_id":"x11","followers_count":9223372036854775808}`, nil, 400, "INVALID_ARGUMENT", "followers_count"},
		{"create: bad post_type", "POST", "createCounter", "", `{"counter_id":"x7","post_type":"private"}`, nil, 400, "INVALID_ARGUMENT", "post_type"},
		{"create: too deep", "POST", "createCounter", "", `{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, nil, 400, "INVALID_ARGUMENT", "nested"},
		{"create: over 64 KiB", "POST", "createCounter", "", `{"counter_id":"` + strings.Repeat("a", 70_000) + `"}`, nil, 413, "PAYLOAD_TOO_LARGE", "bytes"},

		{"increment: wrong method", "PUT", "incrementCounter", "", inc(`"delta":1`), nil, 405, "METHOD_NOT_ALLOWED", "POST"},
		{"increment: unknown counter", "POST", "incrementCounter", "", fmt.Sprintf(`{"counter_id":%q}`, missing), nil, 404, "NOT_FOUND", missing},
		{"increment: no counter_id", "POST", "incrementCounter", "", `{"delta":1}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"increment: zero delta", "POST", "incrementCounter", "", inc(`"delta":0`), nil, 400, "INVALID_ARGUMENT", "delta"},
		{"increment: delta too big", "POST", "incrementCounter", "", inc(`"delta":1000000001`), nil, 400, "INVALID_ARGUMENT", "delta"},
		{"increment: delta too small", "POST", "incrementCounter", "", inc(`"delta":-1000000001`), nil, 400, "INVALID_ARGUMENT", "delta"},
		{"increment: delta beyond int64", "POST", "incrementCounter", "", inc(`"delta":99999999999999999999`), nil, 400, "INVALID_ARGUMENT", "delta"},
		{"increment: delta string", "POST", "incrementCounter", "", inc(`"delta":"1"`), nil, 400, "INVALID_ARGUMENT", "delta"},
		{"increment: delta and action", "POST", "incrementCounter", "", inc(`"delta":1,"action_type":"increment"`), nil, 400, "INVALID_ARGUMENT", "action_type"},
		{"increment: bad action", "POST", "incrementCounter", "", inc(`"action_type":"like"`), nil, 400, "INVALID_ARGUMENT", "action_type"},
		{"increment: unknown field", "POST", "incrementCounter", "", inc(`"amount":1`), nil, 400, "INVALID_ARGUMENT", "amount"},
		{"increment: key too long", "POST", "incrementCounter", "", inc(`"delta":1`), []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "INVALID_ARGUMENT", "Idempotency-Key"},
		{"increment: key with space", "POST", "incrementCounter", "", inc(`"delta":1`), []string{"Idempotency-Key", "a b"}, 400, "INVALID_ARGUMENT", "Idempotency-Key"},
		{"increment: key reused", "POST", "incrementCounter", "", inc(`"delta":6`), []string{"Idempotency-Key", "first"}, 409, "ALREADY_EXISTS", "Idempotency-Key"},
		{"increment: over 1 MiB", "POST", "incrementCounter", "", inc(`"x":"` + strings.Repeat("a", 1<<20) + `"`), nil, 413, "PAYLOAD_TOO_LARGE", "bytes"},
		{"increment: key in header and body differ", "POST", "incrementCounter", "", inc(`"idempotency_key":"a"`), []string{"Idempotency-Key", "b"}, 400, "INVALID_ARGUMENT", "idempotency_key"},
		{"increment: empty body key", "POST", "incrementCounter", "", inc(`"idempotency_key":""`), nil, 400, "INVALID_ARGUMENT", "idempotency_key"},
		{"increment: batch and counter_id", "POST", "incrementCounter", "", inc(`"increments":[]`), nil, 400, "INVALID_ARGUMENT", "increments"},
		{"increment: empty batch", "POST", "incrementCounter", "", `{"increments":[]}`, nil, 400, "INVALID_ARGUMENT", "increments"},
		{"increment: batch of 501", "POST", "incrementCounter", "", `{"increments":[` + strings.Repeat(`{"counter_id":"a"},`, 500) + `{"counter_id":"a"}]}`, nil, 400, "INVALID_ARGUMENT", "increments"},
		{"increment: batch with a header key", "POST", "incrementCounter", "", `{"increments":[{"counter_id":"a"}]}`, []string{"Idempotency-Key", "k"}, 400, "INVALID_ARGUMENT", "Idempotency-Key"},
		{"increment: batch item unknown field", "POST", "incrementCounter", "", `{"increments":[{"counter_id":"a","amount":1}]}`, nil, 400, "INVALID_ARGUMENT", "increments[0].amount"},
		{"increment: empty Idempotency-Key", "POST", "incrementCounter", "", inc(`"delta":1`), []string{"Idempotency-Key", ""}, 400, "INVALID_ARGUMENT", "Idempotency-Key must not be empty"},
		{"increment: two Idempotency-Keys", "POST", "incrementCounter", "", inc(`"delta":1`), []string{"Idempotency-Key", "k1", "Idempotency-Key", "k2"}, 400, "INVALID_ARGUMENT", "Idempotency-Key must be sent once"},
		{"increment: unique fields on a plain counter", "POST", "incrementCounter", "", inc(`"member":true`), nil, 400, "INVALID_ARGUMENT", "member"},

		{"get: wrong method", "POST", "getCounter", "?counter_id=" + id, "", nil, 405, "METHOD_NOT_ALLOWED", "GET"},
		{"get: unknown counter", "GET", "getCounter", "?counter_id=" + missing, "", nil, 404, "NOT_FOUND", missing},
		{"get: unknown counter, strong", "GET", "getCounter", "?consistency=strong&counter_id=" + missing, "", nil, 404, "NOT_FOUND", missing},
		{"get: no counter_id", "GET", "getCounter", "", "", nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"get: bad consistency", "GET", "getCounter", "?consistency=linear&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "consistency"},
		{"get: unknown parameter", "GET", "getCounter", "?counter_id=" + id + "&limit=3", "", nil, 400, "INVALID_ARGUMENT", "limit"},
		{"get: repeated parameter", "GET", "getCounter", "?counter_id=" + id + "&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"get: parameter case", "GET", "getCounter", "?Counter_ID=" + id, "", nil, 400, "INVALID_ARGUMENT", "Counter_ID"},

		{"reshard: unknown counter", "POST", "reshardCounter", "", fmt.Sprintf(`{"counter_id":%q,"num_shards":3}`, missing), nil, 404, "NOT_FOUND", missing},
		{"reshard: zero shards", "POST", "reshardCounter", "", fmt.Sprintf(`{"counter_id":%q,"num_shards":0}`, id), nil, 400, "INVALID_ARGUMENT", "num_shards"},
		{"reshard: 1001 shards", "POST", "reshardCounter", "", fmt.Sprintf(`{"counter_id":%q,"num_shards":1001}`, id), nil, 400, "INVALID_ARGUMENT", "num_shards"},
		{"reshard: no num_shards", "POST", "reshardCounter", "", fmt.Sprintf(`{"counter_id":%q}`, id), nil, 400, "INVALID_ARGUMENT", "num_shards"},
		{"reshard: no counter_id", "POST", "reshardCounter", "", `{"num_shards":3}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},

		{"get: bad history", "GET", "getCounter", "?history=week&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "history"},
		{"get: from without history", "GET", "getCounter", "?from=2026-01-01T00:00:00Z&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "from"},
		{"get: from after to", "GET", "getCounter", "?history=hour&from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "from"},
		{"get: over 1000 buckets", "GET", "getCounter", "?history=minute&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "1000"},
		{"get: offset +24:00", "GET", "getCounter", "?history=hour&to=2026-01-01T00:00:00%2B24:00&counter_id=" + id, "", nil, 400, "INVALID_ARGUMENT", "to"},

		{"reset: unknown counter", "POST", "resetCounter", "", fmt.Sprintf(`{"counter_id":%q}`, missing), nil, 404, "NOT_FOUND", missing},
		{"reset: past the bound", "POST", "resetCounter", "", fmt.Sprintf(`{"counter_id":%q,"count":9007199254740992}`, id), nil, 400, "INVALID_ARGUMENT", "count"},
		{"reset: count string", "POST", "resetCounter", "", fmt.Sprintf(`{"counter_id":%q,"count":"1"}`, id), nil, 400, "INVALID_ARGUMENT", "count"},
		{"delete: unknown counter", "POST", "deleteCounter", "", fmt.Sprintf(`{"counter_id":%q}`, missing), nil, 404, "NOT_FOUND", missing},
		{"delete: no counter_id", "POST", "deleteCounter", "", `{}`, nil, 400, "INVALID_ARGUMENT", "counter_id"},
		{"list: limit 0", "GET", "listCounters", "?limit=0", "", nil, 400, "INVALID_ARGUMENT", "limit"},
		{"list: bad page token", "GET", "listCounters", "?page_token=a/b", "", nil, 400, "INVALID_ARGUMENT", "page_token"},
		{"top: no window", "GET", "topCounters", "", "", nil, 400, "INVALID_ARGUMENT", "window"},
		{"top: bad window", "GET", "topCounters", "?window=week", "", nil, 400, "INVALID_ARGUMENT", "window"},
		{"top: limit 101", "GET", "topCounters", "?window=hour&limit=101", "", nil, 400, "INVALID_ARGUMENT", "limit"},
		{"top: previous of all", "GET", "topCounters", "?window=all&previous=true", "", nil, 400, "INVALID_ARGUMENT", "previous"},
		{"top: bad previous", "GET", "topCounters", "?window=hour&previous=yes", "", nil, 400, "INVALID_ARGUMENT", "previous"},
	}

	// The roll-up of the first increment writes documents of its own (a slot
	// marker, the counter): wait until it did, however late its event comes.
	if got, _ := waitEventual(t, id, 5, time.Now().Add(30*time.Second)); got != 5 {
		t.Fatalf("the roll-up never included the first increment: %d", got)
	}
	waitForQuietEvents(t)
	fs := testenv.Firestore(t, project)
	before := testenv.Dump(t, fs, "counters/"+id, "counters/"+missing)
	idsBefore := docIDs(t, fs.Collection("counters"))
	for _, tc := range cases {
		r := testenv.Do(t, tc.method, url(tc.function)+tc.query, tc.body, tc.headers...)
		var body struct {
			Error struct{ Code, Message string }
		}
		r.Decode(t, &body)
		if r.Status != tc.status || body.Error.Code != tc.code || !strings.Contains(body.Error.Message, tc.mention) {
			t.Errorf("%s: got %s, want %d %s mentioning %q", tc.name, r, tc.status, tc.code, tc.mention)
		}
	}
	after := testenv.Dump(t, fs, "counters/"+id, "counters/"+missing)
	// No counter may appear or vanish, and this test's counter must be
	// untouched.
	if idsAfter := docIDs(t, fs.Collection("counters")); !slices.Equal(idsBefore, idsAfter) {
		t.Errorf("counters were created or deleted by bad requests")
	}
	if !slices.Equal(slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after))) {
		t.Errorf("documents were created or deleted by bad requests")
	}
	for path, doc := range before {
		if strings.Contains(path, id) && after[path] != doc {
			t.Errorf("%s changed: %s -> %s", path, doc, after[path])
		}
	}
}

// docIDs lists the ids of a collection's documents, sorted.
func docIDs(t *testing.T, col *firestore.CollectionRef) []string {
	t.Helper()
	refs, err := col.DocumentRefs(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range refs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	for _, fn := range []string{"createCounter", "incrementCounter", "getCounter"} {
		r := testenv.Do(t, "OPTIONS", url(fn), "",
			"Origin", "https://app.example.com",
			"Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "content-type, idempotency-key")
		if r.Status != http.StatusNoContent {
			t.Errorf("%s preflight: %s", fn, r)
		}
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin = %q, want * (AUTH=off)", fn, got)
		}
		if got := r.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(got, "Idempotency-Key") {
			t.Errorf("%s: Access-Control-Allow-Headers = %q", fn, got)
		}
	}
}

func TestAuthOffIsLoggedAsAWarning(t *testing.T) {
	t.Parallel()
	testenv.Do(t, "GET", url("getCounter")+"?counter_id=any", "") // the functions start on a first request
	for _, line := range logs.Await(map[string]any{"severity": "WARNING"}) {
		if msg, _ := line["message"].(string); strings.HasPrefix(msg, "AUTH=off") {
			return
		}
	}
	t.Error("no WARNING line says AUTH=off")
}

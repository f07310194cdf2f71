// Package callable calls every public function through the Firebase JS
// SDK's httpsCallable (sdk.mjs, on Node), against the functions served by
// functions-framework in this process with AUTH=required, the Auth
// emulator for sign-in and the Firestore emulator.
package callable

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/service"
)

var base, project string

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	project = testenv.AuthProject() // the project of the SDK's sign-ins
	base = testenv.ServeFunctions(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "required",
		"USER_CREATE":          "on", // the SDKs' users create counters of their own
		"RATE_LIMITS":          "query=0.001:4",
		"SHARD_COUNT_CACHE":    "1m",
		"LOG_LEVEL":            "warn",
	})
	os.Exit(m.Run())
}

func TestFirebaseSDK(t *testing.T) {
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "node_modules", "firebase")); err != nil {
		testenv.NeedEmulators(t, fmt.Errorf("node_modules/firebase is missing: run npm ci (scripts/test.sh does)"))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.NeedEmulators(t, fmt.Errorf("node is not installed"))
	}
	// A function that cannot serve: its configuration is refused.
	broken := service.New(func(k string) string {
		return map[string]string{"AUTH": "sometimes", "CORS_ORIGINS": "*"}[k]
	})
	mux := http.NewServeMux()
	mux.Handle("/getCounter", broken.Handler("getCounter"))
	brokenSrv := httptest.NewServer(mux)
	defer brokenSrv.Close()

	big := plantBigCounter(t)
	// Prices are the backend's to record (an end user's call is 403): three
	// of an exchange of this run, for the script's queries.
	run := fmt.Sprint(time.Now().UnixNano())
	var prices []string
	for i := range 3 {
		prices = append(prices, fmt.Sprintf(`{"symbol":"S%d","price":{"currency":"USD","micros":%d},"exchange":"SDK%s","instrumentType":"etf","timestamp":"2019-01-01T00:00:0%dZ"}`, i, 1000+i, run, i))
	}
	testenv.CreateUser(t, project, "backend-"+run)
	if r := testenv.Do(t, "POST", base+"/recordInstruments", `{"instruments":[`+strings.Join(prices, ",")+`]}`,
		"Authorization", "Bearer "+testenv.AdminIDToken(project, "backend-"+run)); r.Status != http.StatusCreated {
		t.Fatalf("the backend records prices: %s", r)
	}
	authHost, _ := testenv.AuthEmulatorHost()
	cmd := exec.Command(node, filepath.Join(root, "e2e", "callable", "sdk.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"PROJECT="+project,
		"FUNCTIONS="+strings.TrimPrefix(base, "http://"),
		"AUTH_EMULATOR="+authHost,
		"BROKEN="+brokenSrv.URL,
		"RUN="+run,
		"BIG="+big, fmt.Sprintf("BIG_COUNT=%d", bigCount),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node sdk.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("sdk.mjs did not report success:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// bigCount is past 2^53: JSON readers that use doubles cannot hold it.
const bigCount = 1<<53 + 1

// plantBigCounter writes a counter whose shard holds bigCount by hand (the
// functions refuse to count past 2^53 − 1) and returns its id.
func plantBigCounter(t *testing.T) string {
	id := fmt.Sprintf("big-%d", time.Now().UnixNano())
	fs := testenv.Firestore(t, project)
	ctx := context.Background()
	if _, err := fs.Doc("counters/"+id).Set(ctx, map[string]any{"num_shards": 1, "count": 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Doc("counters/"+id+"/shards/0").Set(ctx, map[string]any{"count": int64(bigCount)}); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestMobileSDKPayloads sends callable requests exactly as the iOS and
// Android SDKs write them (FunctionsSerializer of firebase-ios-sdk and
// firebase-android-sdk): a Swift Int or a Kotlin Long is an Int64Value
// wrapper, an unsigned one a UInt64Value, and some numbers arrive as
// integral doubles. Each is an integer; a result past 2^53 comes back
// wrapped, as those SDKs decode it.
func TestMobileSDKPayloads(t *testing.T) {
	uid := fmt.Sprintf("mobile-%d", time.Now().UnixNano())
	testenv.CreateUser(t, project, uid)
	bearer := "Bearer " + testenv.ValidIDToken(project, uid)
	long := func(n int64) string {
		return fmt.Sprintf(`{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"%d"}`, n)
	}
	id := uid + "-c"
	callable := func(fn, data string) testenv.Response {
		return testenv.Do(t, "POST", base+"/"+fn, `{"data":`+data+`}`, "Authorization", bearer)
	}
	for _, tc := range []struct{ fn, data, want string }{
		{"createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":%s}`, id, long(4)), `"num_shards":4`},
		{"createCounter", fmt.Sprintf(`{"counter_id":%q,"followers_count":%s}`, id+"-h", long(25_000)), `"num_shards":25`},
		{"createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":{"@type":"type.googleapis.com/google.protobuf.UInt64Value","value":"7"}}`, id+"-u"), `"num_shards":7`},
		{"incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":%s}`, id, long(1)), `"delta":1`},
		{"incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":1.0}`, id), `"delta":1`},
		{"incrementCounter", fmt.Sprintf(`{"increments":[{"counter_id":%q,"delta":%s}]}`, id, long(-1)), `"delta":-1`},
		{"listCounters", fmt.Sprintf(`{"limit":%s}`, long(2)), id},
		{"resetCounter", fmt.Sprintf(`{"counter_id":%q,"count":%s}`, id, long(40)), `"count":40`},
		{"getCounter", fmt.Sprintf(`{"counter_id":%q,"consistency":"strong"}`, plantBigCounter(t)),
			fmt.Sprintf(`"count":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"%d"}`, bigCount)},
	} {
		r := callable(tc.fn, tc.data)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("%s %s: %s, want 200 with %s", tc.fn, tc.data, r, tc.want)
		}
	}
	// Not integers: 400 naming the field, as for any other bad value.
	for _, data := range []string{
		fmt.Sprintf(`{"counter_id":%q,"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"1.5"}}`, id),
		fmt.Sprintf(`{"counter_id":%q,"delta":1.5}`, id),
		fmt.Sprintf(`{"counter_id":%q,"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"99999999999999999999"}}`, id),
	} {
		r := callable("incrementCounter", data)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"field":"delta"`) {
			t.Errorf("%s: %s, want 400 naming delta", data, r)
		}
	}
}

// Package callable calls every public function through the Firebase JS
// SDK's httpsCallable (sdk.mjs, on Node), against the functions served by
// functions-framework in this process with AUTH=required, the Auth
// emulator for sign-in and the Firestore emulator.
package callable

import (
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
	_, fsErr := testenv.EmulatorHost()
	_, authErr := testenv.AuthEmulatorHost()
	if testenv.Missing(fsErr, authErr) {
		os.Exit(0)
	}
	project = testenv.AuthProject() // the project of the SDK's sign-ins
	testenv.Setenv(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "required",
		"RATE_LIMITS":          "query=0.001:4",
		"SHARD_COUNT_CACHE":    "1m",
		"LOG_LEVEL":            "warn",
	})
	var err error
	if base, err = testenv.StartFunctions(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
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

	authHost, _ := testenv.AuthEmulatorHost()
	cmd := exec.Command(node, filepath.Join(root, "e2e", "callable", "sdk.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"PROJECT="+project,
		"FUNCTIONS="+strings.TrimPrefix(base, "http://"),
		"AUTH_EMULATOR="+authHost,
		"BROKEN="+brokenSrv.URL,
		fmt.Sprintf("RUN=%d", time.Now().UnixNano()),
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

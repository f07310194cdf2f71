package service_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	. "github.com/shardcount/shardcount/internal/service"
)

func httptestBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

func serverWith(env map[string]string) *Server {
	return New(func(k string) string { return env[k] })
}

// TestMisconfigurationAnswers503 checks that a bad setting never crashes
// a function: every request gets 503 through the edge (with CORS headers,
// so a browser sees it), and the detail stays in the logs.
func TestMisconfigurationAnswers503(t *testing.T) {
	s := serverWith(map[string]string{"AUTH": "sometimes", "ROLLUP_CADENCE": "never", "CORS_ORIGINS": "https://app.example.com"})
	for _, spec := range Catalog {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(cmpOr(spec.Method, http.MethodPost), "/", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://app.example.com")
		if spec.Kind == FirestoreTrigger {
			req = shardEvent(t, "c1")
		}
		s.Handler(spec.Name)(rec, req)
		var body struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusServiceUnavailable || body.Error.Code != "UNAVAILABLE" || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: %d %s", spec.Name, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "sometimes") {
			t.Errorf("%s: the configuration detail leaks to the client: %s", spec.Name, rec.Body)
		}
		if spec.Kind == HTTPTrigger && rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example.com" {
			t.Errorf("%s: the 503 has no CORS header, a browser cannot read it", spec.Name)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func shardEvent(t *testing.T, id string) *http.Request {
	return testenv.ShardEvent(t, "/", "p", id, 0, 1, time.Now())
}

// TestEventsThatAreNotUsableAre4xx: a request rollupCounter cannot use gets
// a clear 4xx, not a 500 that Eventarc (and the local bridge) would retry.
func TestEventsThatAreNotUsableAre4xx(t *testing.T) {
	s := serverWith(map[string]string{"AUTH": "off", "GOOGLE_CLOUD_PROJECT": "demo-p", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9"})
	h := s.Handler("rollupCounter")
	structured := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(
		`{"specversion":"1.0","id":"e1","source":"s","type":"`+WrittenEvent+`","data":"x"}`))
	structured.Header.Set("Content-Type", "application/cloudevents+json")
	badBody := shardEvent(t, "c1")
	badBody.Body = http.NoBody
	badBody.Header.Set("Content-Length", "0")
	notShard := shardEvent(t, "c1")
	data, _ := fsevent.Encode(&pb.Document{Name: "projects/p/databases/(default)/documents/other/x"}, nil)
	notShard.Body = httptestBody(data)
	otherDB := shardEvent(t, "c1")
	data, _ = fsevent.Encode(&pb.Document{Name: "projects/p/databases/other-db/documents/counters/c1/shards/0"}, nil)
	otherDB.Body = httptestBody(data)
	missingID := shardEvent(t, "c1")
	missingID.Header.Del("Ce-Id")
	for name, tc := range map[string]struct {
		req    *http.Request
		status int
		says   string
	}{
		"structured mode":  {structured, 415, "structured-mode"},
		"not a CloudEvent": {httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`)), 400, "not a CloudEvent"},
		"unusable body":    {badBody, 400, "DocumentEventData"},
		"not a shard":      {notShard, 400, "not a shard"},
		"another database": {otherDB, 204, ""}, // acknowledged, logged: Eventarc redelivers anything else
		"no id":            {missingID, 400, "CloudEvent"},
		"GET":              {httptest.NewRequest(http.MethodGet, "/", nil), 405, "POST"},
	} {
		rec := httptest.NewRecorder()
		h(rec, tc.req)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", name, rec.Code, rec.Body, tc.status, tc.says)
		}
	}
}

// TestConsumingWithoutAppCheckIsRefused: APP_CHECK_CONSUME consumes App
// Check tokens, which APP_CHECK=off would not check.
func TestConsumingWithoutAppCheckIsRefused(t *testing.T) {
	s := serverWith(map[string]string{"APP_CHECK_CONSUME": "incrementCounter", "K_SERVICE": "incrementcounter", "FUNCTION_TARGET": "incrementCounter", "GOOGLE_CLOUD_PROJECT": "p"})
	if err := s.StartupError(); err == nil || !strings.Contains(err.Error(), "APP_CHECK=off") {
		t.Errorf("APP_CHECK_CONSUME without APP_CHECK: %v, want it refused", err)
	}
}

// TestOnlyPageTokenSignersNeedTheSecret: deployed, queryInstruments refuses
// to start without PAGE_TOKEN_SECRET (its tokens could be forged), while a
// counters function, which signs none, starts without it.
func TestOnlyPageTokenSignersNeedTheSecret(t *testing.T) {
	deployed := func(target string) *Server {
		return serverWith(map[string]string{"K_SERVICE": strings.ToLower(target), "FUNCTION_TARGET": target, "GOOGLE_CLOUD_PROJECT": "p"})
	}
	if err := deployed("queryInstruments").StartupError(); err == nil || !strings.Contains(err.Error(), "PAGE_TOKEN_SECRET") {
		t.Errorf("queryInstruments without the key: %v, want it refused", err)
	}
	if err := deployed("incrementCounter").StartupError(); err != nil {
		t.Errorf("incrementCounter without the key: %v, want it to start", err)
	}
}

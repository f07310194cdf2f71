package triggerbridge

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTheAppsEventsGoToItsEmulatorAsTheyCame: an event of a trigger of
// shardcount's goes to shardcount's function, converted as Eventarc sends
// it; one of any other trigger goes, as the emulator sent it (its base64
// body, its ce-datacontenttype) but for its hop-by-hop headers, to the
// app's Functions emulator at the same path.
func TestTheAppsEventsGoToItsEmulatorAsTheyCame(t *testing.T) {
	type got struct {
		path, contentType, ceType, connection string
		body                                  string
	}
	var mu sync.Mutex
	seen := map[string]got{}
	record := func(who string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen[who] = got{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Ce-Datacontenttype"), r.Header.Get("Connection"), string(b)}
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}
	}
	ours := httptest.NewServer(record("shardcount"))
	defer ours.Close()
	app := httptest.NewServer(record("app"))
	defer app.Close()
	b := &Bridge{Target: ours.URL, App: app.URL}
	body := base64.StdEncoding.EncodeToString([]byte("protobuf"))
	for _, trigger := range []string{"rollupCounter", "us-central1-notifyAt100-0"} {
		req := httptest.NewRequest(http.MethodPost, "/functions/projects/demo-x/triggers/"+trigger, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/protobuf")
		req.Header.Set("Ce-Datacontenttype", "application/protobuf")
		req.Header.Set("Connection", "keep-alive")
		rec := httptest.NewRecorder()
		b.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("%s: %d", trigger, rec.Code)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !b.Quiet(0); {
		if time.Now().After(deadline) {
			t.Fatal("the events were not delivered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if g := seen["shardcount"]; g.path != "/rollupCounter" || g.body != "protobuf" || g.ceType != "" {
		t.Errorf("shardcount's function got %+v", g)
	}
	if g := seen["app"]; g.path != "/functions/projects/demo-x/triggers/us-central1-notifyAt100-0" || g.body != body || g.ceType != "application/protobuf" || g.connection != "" {
		t.Errorf("the app's emulator got %+v", g)
	}
}

// TestAppTriggersBridgesV2FirestoreTriggersOnly: the emulator's
// /backends, read as the CLI lists its functions: a v2 Firestore trigger
// is registered under the key the CLI serves it at; a v1 one and another
// service's are skipped, and said to be; an HTTP function is nothing to
// bridge.
func TestAppTriggersBridgesV2FirestoreTriggersOnly(t *testing.T) {
	cli := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"backends": [{"functionTriggers": [
			{"id": "us-central1-notify", "eventTrigger": {"eventType": "google.cloud.firestore.document.v1.written", "eventFilters": {"database": "(default)"}, "eventFilterPathPatterns": {"document": "counters/{id}"}}},
			{"id": "us-central1-old", "eventTrigger": {"eventType": "providers/cloud.firestore/eventTypes/document.write"}},
			{"id": "us-central1-topic", "eventTrigger": {"eventType": "google.cloud.pubsub.topic.v1.messagePublished"}},
			{"id": "us-central1-api", "httpsTrigger": {}}
		]}]}`)
	}))
	defer cli.Close()
	triggers, skipped, err := appTriggers(t.Context(), cli.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(triggers) != 1 || triggers[0] != (Trigger{Function: "us-central1-notify-0", EventType: "google.cloud.firestore.document.v1.written", Document: "counters/{id}", Database: "(default)"}) {
		t.Errorf("triggers: %+v", triggers)
	}
	if len(skipped) != 2 || !strings.HasPrefix(skipped[0], "us-central1-old") || !strings.HasPrefix(skipped[1], "us-central1-topic") {
		t.Errorf("skipped: %v", skipped)
	}
}

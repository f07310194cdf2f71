package functions

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// TestMisconfigurationAnswers503 checks that a bad setting never crashes
// the function: HTTP calls get 503 with a pointer to the logs, events an
// error (so Eventarc keeps them for a fixed deployment).
func TestMisconfigurationAnswers503(t *testing.T) {
	s := &Server{getenv: func(k string) string {
		return map[string]string{"AUTH": "sometimes", "ROLLUP_CADENCE": "never"}[k]
	}}
	for _, spec := range Catalog {
		switch spec.Kind {
		case HTTPTrigger:
			rec := httptest.NewRecorder()
			s.HTTP(spec.Name)(rec, httptest.NewRequest(spec.Method, "/", strings.NewReader("{}")))
			var body struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(rec.Body.Bytes(), &body)
			if rec.Code != http.StatusServiceUnavailable || body.Error.Code != "UNAVAILABLE" || !strings.Contains(body.Error.Message, "logs") {
				t.Errorf("%s: %d %s", spec.Name, rec.Code, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "sometimes") {
				t.Errorf("%s: the configuration detail leaks to the client: %s", spec.Name, rec.Body)
			}
		case FirestoreTrigger:
			if err := s.Event(spec.Name)(context.Background(), cloudevents.NewEvent()); err == nil {
				t.Errorf("%s: no error with a bad configuration", spec.Name)
			}
		}
	}
}

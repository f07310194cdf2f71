// Package eventbridge delivers the Firestore emulator's trigger events to
// locally served CloudEvent functions. It is for local runs and tests only:
// deployed functions receive events from Eventarc and never see it.
//
// The emulator (started with --functions_emulator=HOST:PORT) POSTs each
// matching write to http://HOST:PORT/functions/projects/{p}/triggers/{id}
// as a binary-mode CloudEvent with two quirks functions-framework rejects: a
// ce-datacontenttype header, which binary mode forbids (the content type is
// Content-Type), and a body holding the base64 text of the protobuf instead
// of its bytes. The bridge fixes both and forwards to {target}/{id}, so a
// trigger registered with the function's name reaches that function.
package eventbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Delivery is one event as the bridge forwards it, in production form.
type Delivery struct {
	Function string
	Header   http.Header
	Body     []byte
}

// Subject returns the event's ce-subject, "documents/<path>".
func (d *Delivery) Subject() string { return d.Header.Get("Ce-Subject") }

// Bridge is the http.Handler the emulator posts to.
type Bridge struct {
	// Target is the base URL of the functions, e.g. http://127.0.0.1:8081.
	Target string
	// Intercept, when set, sees every event first; returning false drops
	// it (tests use this to capture events or simulate a lost one).
	Intercept func(*Delivery) bool
	// Client sends the forwarded requests; nil means http.DefaultClient.
	Client *http.Client
}

func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /functions/projects/{p}/triggers/{id}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method != http.MethodPost || len(parts) != 5 || parts[0] != "functions" || parts[1] != "projects" || parts[3] != "triggers" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d := Convert(parts[4], r.Header, body)
	if b.Intercept != nil && !b.Intercept(d) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	status, err := b.Deliver(r.Context(), d)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.WriteHeader(status)
}

// Convert turns an emulator request into what Eventarc would send.
func Convert(function string, h http.Header, body []byte) *Delivery {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Ce-") {
			out[k] = v
		}
	}
	ct := out.Get("Ce-Datacontenttype")
	out.Del("Ce-Datacontenttype")
	if ct == "" {
		ct = h.Get("Content-Type")
	}
	out.Set("Content-Type", ct)
	if raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(body))); err == nil {
		body = raw
	}
	return &Delivery{Function: function, Header: out, Body: body}
}

// Deliver POSTs d to its function and returns the HTTP status.
func (b *Bridge) Deliver(ctx context.Context, d *Delivery) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(b.Target, "/")+"/"+d.Function, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header = d.Header.Clone()
	c := b.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("eventbridge: deliver to %s: %w", d.Function, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Trigger is a Firestore trigger to register with the emulator.
type Trigger struct {
	Function  string // the trigger id; events go to the function of that name
	EventType string // e.g. google.cloud.firestore.document.v1.written
	Document  string // path pattern, e.g. counters/{counterId}/shards/{shardId}
}

// Register asks the emulator at emulatorHost to send project's events
// matching t to its functions emulator address. Registrations last until
// the emulator stops.
func Register(ctx context.Context, emulatorHost, project string, t Trigger) error {
	body, _ := json.Marshal(map[string]any{
		"eventType": t.EventType,
		"database":  "(default)",
		"namespace": "(default)",
		"document":  map[string]string{"value": t.Document, "matchType": "PATH_PATTERN"},
	})
	u := fmt.Sprintf("http://%s/emulator/v1/projects/%s/eventarcTrigger?eventarcTriggerId=%s", emulatorHost, project, t.Function)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("eventbridge: register %s: %w", t.Function, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("eventbridge: register %s: %s: %s", t.Function, resp.Status, msg)
	}
	return nil
}

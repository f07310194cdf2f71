// Package triggerbridge delivers the Firestore emulator's trigger events to
// locally served functions, the way Eventarc delivers them to deployed
// ones. It is for local runs and tests only: deployed functions receive
// events from Eventarc and never see it.
//
// The emulator (started with --functions_emulator=HOST:PORT) POSTs each
// matching write to http://HOST:PORT/functions/projects/{p}/triggers/{id}
// as a binary-mode CloudEvent with two quirks functions-framework rejects: a
// ce-datacontenttype header, which binary mode forbids (the content type is
// Content-Type), and a body holding the base64 text of the protobuf instead
// of its bytes. The bridge fixes both and forwards to {target}/{id}, so a
// trigger registered with the function's name reaches that function.
//
// The emulator waits for each answer before it sends the next event, so a
// bridge that forwarded synchronously would queue every counter's events
// behind the slowest one. Like Eventarc, the bridge instead accepts at once
// and delivers concurrently: up to Workers events in flight, the rest
// queued in memory (never dropped; when Queue is full the emulator waits).
// Like Eventarc with --retry, it delivers an event again, with backoff, when
// the function answers 429 or 5xx or cannot be reached; a 4xx is final.
//
// The emulator has one address for every trigger. With App set, the events
// of triggers that are not shardcount's go, as the emulator sent them, to
// an app's own Functions emulator (the Firebase CLI's), whose Firestore
// triggers WatchApp registers: the app's functions run beside shardcount's
// on the same writes (app.go).
package triggerbridge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardcount/shardcount/internal/service"
)

// Delivery is one event as the bridge forwards it, in production form.
type Delivery struct {
	Function string
	// URL, when set, is where it goes as it is: an app's own function.
	URL string
	// Project is the project whose write the event is about.
	Project string
	Header  http.Header
	Body    []byte
}

// Subject returns the event's ce-subject, "documents/<path>".
func (d *Delivery) Subject() string { return d.Header.Get("Ce-Subject") }

// Bridge is the http.Handler the emulator posts to.
type Bridge struct {
	// Target is the base URL of the functions, e.g. http://127.0.0.1:8081.
	Target string
	// Routes, when set, send a project's events to one of its base URLs,
	// at random, as Eventarc spreads events over a function's instances;
	// other projects' events go to Target.
	Routes map[string][]string
	// App, when set, is the base URL of an app's own Functions emulator,
	// which takes the events of the triggers that are not shardcount's.
	App string
	// Intercept, when set, sees every event first; returning false drops
	// it (tests use this to capture events or simulate a lost one).
	Intercept func(*Delivery) bool
	// Client sends the forwarded requests; nil means one keeping a
	// connection per worker.
	Client *http.Client
	// Workers bounds the deliveries in flight (default 64); Queue bounds
	// the events waiting (default 100,000).
	Workers, Queue int
	// Retries bounds the deliveries of one event (default 8: about 30 s
	// of backoff); Eventarc keeps trying for 24 hours.
	Retries int
	Log     *slog.Logger

	once     sync.Once
	queue    chan *Delivery
	appQueue chan *Delivery // the app's: its own workers, so a slow or stopped emulator holds up none of shardcount's
	pending  atomic.Int64   // accepted, not yet delivered or given up
	accepted atomic.Int64   // when the last event was accepted (Unix ns)
}

func (b *Bridge) start() {
	b.once.Do(func() {
		workers, queue := b.Workers, b.Queue
		if workers <= 0 {
			workers = 64
		}
		if queue <= 0 {
			queue = 100_000
		}
		if b.Retries <= 0 {
			b.Retries = 8
		}
		if b.Log == nil {
			b.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
		}
		if b.Client == nil {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = workers // one kept-alive connection per worker
			b.Client = &http.Client{Transport: tr}
		}
		b.queue, b.appQueue = make(chan *Delivery, queue), make(chan *Delivery, queue)
		work := func(q chan *Delivery, retries int) {
			for d := range q {
				b.deliverWithRetries(d, retries)
				b.pending.Add(-1)
			}
		}
		for range workers {
			go work(b.queue, b.Retries)
		}
		for range appWorkers {
			go work(b.appQueue, appRetries)
		}
	})
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
	queue := &b.queue
	if b.App != "" && !ours(parts[4]) {
		// The Firebase CLI's emulator reads the emulator's own form.
		d = &Delivery{Function: parts[4], URL: strings.TrimSuffix(b.App, "/") + r.URL.Path, Header: endToEnd(r.Header), Body: body}
		queue = &b.appQueue
	}
	d.Project = parts[2]
	if b.Intercept != nil && !b.Intercept(d) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b.start()
	b.pending.Add(1)
	b.accepted.Store(time.Now().UnixNano())
	*queue <- d // blocks the emulator, not the other events, when full
	w.WriteHeader(http.StatusAccepted)
}

// Quiet reports whether every event accepted was delivered (or given up)
// and none arrived for the given time: the emulator sends a write's event
// within milliseconds to a few hundred, so earlier writes are done.
func (b *Bridge) Quiet(d time.Duration) bool {
	return b.pending.Load() == 0 && time.Since(time.Unix(0, b.accepted.Load())) >= d
}

// The app's deliveries: a few workers, and few attempts, so a slow or
// stopped emulator of the app's costs little.
const (
	appWorkers = 8
	appRetries = 3
)

// endToEnd is a request's header without its hop-by-hop fields (RFC 9110,
// 7.6.1): what a proxy forwards.
func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect", "Content-Length"} {
		out.Del(k)
	}
	return out
}

func (b *Bridge) deliverWithRetries(d *Delivery, retries int) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		status, err := b.Deliver(context.Background(), d)
		retry := err != nil || status == http.StatusTooManyRequests || status >= 500
		if !retry {
			if status >= 400 {
				b.Log.Warn("the function refused an event", "function", d.Function, "subject", d.Subject(), "status", status)
			}
			return
		}
		if attempt >= retries {
			b.Log.Error("gave up delivering an event", "function", d.Function, "subject", d.Subject(), "status", status, "error", fmt.Sprint(err))
			return
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 10*time.Second)
	}
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

// Deliver POSTs d to its function once and returns the HTTP status.
func (b *Bridge) Deliver(ctx context.Context, d *Delivery) (int, error) {
	target := b.Target
	if urls := b.Routes[d.Project]; len(urls) > 0 {
		target = urls[rand.IntN(len(urls))]
	}
	url := strings.TrimSuffix(target, "/") + "/" + d.Function
	if d.URL != "" {
		url = d.URL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header = d.Header.Clone()
	b.start()
	resp, err := b.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("triggerbridge: deliver to %s: %w", d.Function, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// ours reports whether a trigger id is one of shardcount's functions.
func ours(id string) bool {
	for _, spec := range service.Catalog {
		if spec.Kind == service.FirestoreTrigger && spec.Name == id {
			return true
		}
	}
	return false
}

// RegisterAll registers every Firestore trigger of service.Catalog with the
// emulator at emulatorHost, for database of project.
func RegisterAll(ctx context.Context, emulatorHost, project, database string) error {
	for _, spec := range service.Catalog {
		if spec.Kind != service.FirestoreTrigger {
			continue
		}
		if err := Register(ctx, emulatorHost, project, Trigger{Function: spec.Name, EventType: spec.EventType, Document: spec.Document, Database: database}); err != nil {
			return err
		}
	}
	return nil
}

// Trigger is a Firestore trigger to register with the emulator.
type Trigger struct {
	Function  string // the trigger id; events go to the function of that name
	EventType string // e.g. google.cloud.firestore.document.v1.written
	Document  string // path pattern, e.g. counters/{counterId}/shards/{shardId}
	Database  string // the database whose writes it takes ("" for (default))
}

// Register asks the emulator at emulatorHost to send project's events
// matching t to its functions emulator address. Registrations last until
// the emulator stops.
func Register(ctx context.Context, emulatorHost, project string, t Trigger) error {
	body, _ := json.Marshal(map[string]any{
		"eventType": t.EventType,
		"database":  cmp.Or(t.Database, "(default)"),
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
		return fmt.Errorf("triggerbridge: register %s: %w", t.Function, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("triggerbridge: register %s: %s: %s", t.Function, resp.Status, msg)
	}
	return nil
}

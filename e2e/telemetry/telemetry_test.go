// Package telemetry runs the functions with OTEL_EXPORTER_OTLP_ENDPOINT
// pointed at a local OTLP receiver (internal/localdev/otlpsink), as
// docs/operations/observability.md tells an operator to, and checks what
// arrives: a request's spans continue the caller's trace, a group commit's
// flush and the requests it carried link to each other, the Firestore
// commit is the flush's child, the roll-up of the shard links to the flush
// that wrote it; and the metrics of increments, commits, the roll-up's lag,
// reconcile's corrections and audit mismatches, and refusals.
package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/otlpsink"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
)

var (
	base, project, emulatorAddr, triggerAddr string
	sink                                     = &otlpsink.Sink{}
	run                                      = fmt.Sprint(time.Now().UnixNano() % 1e9)
)

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(true)
	emulatorAddr, triggerAddr = testenv.PrivateEmulatorAddrs()
	project = testenv.AuthProject()
	receiver := httptest.NewServer(sink)
	base = testenv.ServeFunctions(map[string]string{
		"GOOGLE_CLOUD_PROJECT":        project,
		"FIRESTORE_EMULATOR_HOST":     emulatorAddr,
		"AUTH":                        "required",
		"COUNTER_KINDS":               `{"likes": {"unique": true}, "views": {"num_shards": 2}}`,
		"GROUP_COMMIT_MAX_WAIT":       "20ms", // so concurrent increments share flushes
		"LOG_LEVEL":                   "warn",
		"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.URL,
		"OTEL_METRIC_EXPORT_INTERVAL": "300",
		"OTEL_BSP_SCHEDULE_DELAY":     "50",
	})
	code := m.Run()
	receiver.Close()
	os.Exit(code)
}

// lost is the counter whose shard events the bridge drops.
var lost = "views:lost-" + run

func TestSpansAndMetrics(t *testing.T) {
	testenv.StartEmulator(t, emulatorAddr, "--functions_emulator="+triggerAddr)
	l, err := net.Listen("tcp", triggerAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	bridge := &triggerbridge.Bridge{Target: base, Intercept: func(d *triggerbridge.Delivery) bool {
		return !strings.HasPrefix(d.Subject(), "documents/counters/"+lost+"/")
	}}
	go http.Serve(l, bridge)
	if err := triggerbridge.RegisterAll(context.Background(), emulatorAddr, project, testenv.Database()); err != nil {
		t.Fatal(err)
	}
	uid := "backend-" + run
	testenv.CreateUser(t, project, uid)
	admin := "Bearer " + testenv.AdminIDToken(project, uid)
	do := func(method, fn, body string, headers ...string) testenv.Response {
		return testenv.Do(t, method, base+"/"+fn, body, headers...)
	}

	// The caller's trace: twenty increments at once, one parent span.
	traceID, parent := hexID(16), hexID(8)
	post := "views:post-" + run
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if r := do("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, post),
				"Authorization", admin, "traceparent", "00-"+traceID+"-"+parent+"-01"); r.Status != http.StatusOK {
				t.Errorf("increment: %s", r)
			}
		})
	}
	wg.Wait()
	// A refusal: no token.
	if r := do("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, post)); r.Status != http.StatusUnauthorized {
		t.Errorf("without a token: %s, want 401", r)
	}
	// A lost event, healed by reconcile: one correction.
	if r := do("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q,"delta":3}`, lost), "Authorization", admin); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if r := do("POST", "reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, lost)); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"corrected":1`) {
		t.Errorf("reconcile of the counter whose event was lost: %s", r)
	}
	// A member written outside the functions: one audit mismatch.
	likes := "likes:post-" + run
	if r := do("POST", "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, likes), "Authorization", admin); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	fs := testenv.FirestoreAt(t, emulatorAddr, project)
	if _, err := fs.Doc("counters/"+likes+"/members/ghost").Set(context.Background(), map[string]any{"uid": "ghost", "counter_id": likes, "joined_at": time.Now()}); err != nil {
		t.Fatal(err)
	}
	if r := do("POST", "reconcileCounters", fmt.Sprintf(`{"counter_id":%q}`, likes)); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"audit_corrected":1`) {
		t.Errorf("reconcile of the counter with a member written by hand: %s", r)
	}

	var problems []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		problems = check(traceID, parent, sink.Spans(), sink.Metrics())
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// check returns what the exports lack.
func check(traceID, parent string, spans []otlpsink.Span, metrics map[string]otlpsink.Metric) []string {
	var problems []string
	byName := map[string][]otlpsink.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	var requests []otlpsink.Span
	for _, s := range byName["incrementCounter"] {
		if s.TraceID == traceID && s.ParentSpanID == parent {
			requests = append(requests, s)
		}
	}
	if len(requests) < 20 {
		problems = append(problems, fmt.Sprintf("%d incrementCounter spans continue the caller's trace %s (parent %s), want 20", len(requests), traceID, parent))
	}
	ids := func(ss []otlpsink.Span) map[string]bool {
		out := map[string]bool{}
		for _, s := range ss {
			out[s.SpanID] = true
		}
		return out
	}
	requestIDs, flushIDs := ids(requests), ids(byName["groupcommit.flush"])
	if !slices.ContainsFunc(byName["edge"], func(s otlpsink.Span) bool { return requestIDs[s.ParentSpanID] }) {
		problems = append(problems, "no edge span under a request's span")
	}
	if !slices.ContainsFunc(requests, func(s otlpsink.Span) bool { return linksTo(s, flushIDs) }) {
		problems = append(problems, "no request span links to the flush that carried it")
	}
	if !slices.ContainsFunc(byName["groupcommit.flush"], func(s otlpsink.Span) bool { return linksTo(s, requestIDs) }) {
		problems = append(problems, "no flush span links to the requests it carried")
	}
	if !slices.ContainsFunc(byName["firestore.commit"], func(s otlpsink.Span) bool { return flushIDs[s.ParentSpanID] }) {
		problems = append(problems, "no Firestore commit span under a flush")
	}
	if !slices.ContainsFunc(byName["rollupCounter"], func(s otlpsink.Span) bool { return linksTo(s, flushIDs) }) {
		problems = append(problems, "no roll-up span links to the flush that wrote its shard")
	}
	for _, want := range []struct {
		name, attribute string
		least           float64
	}{
		{"shardcount.increments", "outcome=applied", 22},
		{"shardcount.groupcommit.flushes", "", 1},
		{"shardcount.groupcommit.items", "", 1},
		{"shardcount.rollup.lag", "", 1},
		{"shardcount.rollup.events", "", 1},
		{"shardcount.rollup.writes", "", 1},
		{"shardcount.reconcile.corrections", "", 1},
		{"shardcount.reconcile.audit_mismatches", "", 1},
		{"shardcount.refusals", "code=401", 1},
		{"http.server.request.duration", "", 1},
	} {
		m, ok := metrics[want.name]
		got := m.Value + float64(m.Count)
		if want.attribute != "" {
			got = m.ByAttribute[want.attribute]
		}
		if !ok || got < want.least {
			problems = append(problems, fmt.Sprintf("metric %s %s: %v, want at least %v", want.name, want.attribute, got, want.least))
		}
	}
	return problems
}

func linksTo(s otlpsink.Span, ids map[string]bool) bool {
	return slices.ContainsFunc(s.Links, func(l otlpsink.Link) bool { return ids[l.SpanID] })
}

func hexID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Package e2e drives the deployed shape of the functions: functions-framework
// serving every registered function in this process, against the Firestore
// emulator started by scripts/test.sh, which delivers shard events to this
// process through the local event bridge. AUTH is off here; e2e/secured
// covers authentication.
package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/functions"
	"github.com/shardcount/shardcount/internal/eventbridge"
	"github.com/shardcount/shardcount/internal/testenv"
)

var (
	base    string // functions-framework base URL
	project string // this binary's emulator project
	bridge  *eventbridge.Bridge
	logs    *testenv.Logs // what the functions log

	tapsMu    sync.Mutex
	taps      = map[string]func(*eventbridge.Delivery) bool{} // by ce-subject prefix
	lastEvent time.Time                                       // when the bridge last finished an event
	inFlight  int                                             // events being delivered
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	logs.Close()
	os.Exit(code)
}

func setup() error {
	host, err := testenv.EmulatorHost()
	if err != nil {
		return err
	}
	triggerAddr := os.Getenv("SHARDCOUNT_TRIGGER_ADDR")
	if triggerAddr == "" {
		return fmt.Errorf("SHARDCOUNT_TRIGGER_ADDR is not set: run the tests with scripts/test.sh, which starts the emulator with --functions_emulator")
	}
	project = testenv.NewProjectID("e2e")
	testenv.Setenv(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "off",
		"ROLLUP_CADENCE":       cadence.String(),
		"LOG_LEVEL":            cmp.Or(os.Getenv("LOG_LEVEL"), "warn"),
	})
	if logs, err = testenv.CaptureStdout(); err != nil {
		return err
	}
	if base, err = testenv.StartFunctions(); err != nil {
		return err
	}

	// Shard events: emulator → bridge (fixes its quirks) → rollupCounter.
	l, err := net.Listen("tcp", triggerAddr)
	if err != nil {
		return fmt.Errorf("listen for trigger events: %w", err)
	}
	bridge = &eventbridge.Bridge{Target: base, Intercept: intercept}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tapsMu.Lock()
		inFlight++
		tapsMu.Unlock()
		bridge.ServeHTTP(w, r)
		tapsMu.Lock()
		inFlight--
		lastEvent = time.Now()
		tapsMu.Unlock()
	}))
	for _, spec := range functions.Catalog {
		if spec.Kind == functions.FirestoreTrigger {
			t := eventbridge.Trigger{Function: spec.Name, EventType: spec.EventType, Document: spec.Document}
			if err := eventbridge.Register(context.Background(), host, project, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// intercept lets a test see (and drop) the events of its own counter.
func intercept(d *eventbridge.Delivery) bool {
	tapsMu.Lock()
	defer tapsMu.Unlock()
	for prefix, tap := range taps {
		if len(d.Subject()) >= len(prefix) && d.Subject()[:len(prefix)] == prefix {
			return tap(d)
		}
	}
	return true
}

// tapCounter routes the events of counter id to tap until the test ends.
func tapCounter(t *testing.T, id string, tap func(*eventbridge.Delivery) bool) {
	prefix := "documents/counters/" + id + "/"
	tapsMu.Lock()
	taps[prefix] = tap
	tapsMu.Unlock()
	t.Cleanup(func() {
		tapsMu.Lock()
		delete(taps, prefix)
		tapsMu.Unlock()
	})
}

// waitForQuietEvents waits until the emulator has delivered every event of
// earlier tests. It delivers them one at a time, each after the previous one
// was answered, so a burst of writes leaves a queue that later tests would
// otherwise wait behind; the queue is empty when no event is in flight and
// none came for a second.
func waitForQuietEvents(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		tapsMu.Lock()
		quiet := inFlight == 0 && time.Since(lastEvent) > time.Second
		tapsMu.Unlock()
		if quiet {
			return
		}
	}
	t.Fatal("the emulator kept delivering events for two minutes")
}

func url(function string) string { return base + "/" + function }

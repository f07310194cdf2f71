// Package e2e drives the deployed shape of the functions: functions-framework
// serving every registered function in this process, against the Firestore
// emulator started by scripts/test.sh, which delivers shard events to this
// process through the local trigger bridge. AUTH is off here; e2e/secured
// covers authentication.
package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
)

var (
	base    string // functions-framework base URL
	project string // this binary's emulator project
	bridge  *triggerbridge.Bridge
	logs    *testenv.Logs // what the functions log

	tapsMu sync.Mutex
	taps   = map[string]func(*triggerbridge.Delivery) bool{} // by ce-subject prefix
)

func TestMain(m *testing.M) {
	_, err := testenv.EmulatorHost()
	if testenv.Missing(err, triggerAddrErr()) {
		os.Exit(0)
	}
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	logs.Close()
	os.Exit(code)
}

func triggerAddrErr() error {
	if os.Getenv("SHARDCOUNT_TRIGGER_ADDR") == "" {
		return fmt.Errorf("SHARDCOUNT_TRIGGER_ADDR is not set: run the tests with scripts/test.sh, which starts the emulator with --functions_emulator")
	}
	return nil
}

func setup() error {
	host, err := testenv.EmulatorHost()
	if err != nil {
		return err
	}
	project = testenv.NewProjectID("e2e")
	testenv.Setenv(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "off",
		"ROLLUP_CADENCE":       cadence.String(),
		// As scripts/dev.sh: a hot counter commits at most about 500
		// times a second, which the emulator's one-at-a-time event
		// delivery keeps up with (README "Group commit").
		"GROUP_COMMIT_MAX_WAIT": "2ms",
		// Short, so a shrink merges for seconds, not minutes.
		"SHARD_COUNT_CACHE":  "2s",
		"FIRESTORE_DEADLINE": "3s",
		"LOG_LEVEL":          cmp.Or(os.Getenv("LOG_LEVEL"), "warn"),
	})
	if logs, err = testenv.CaptureStdout(); err != nil {
		return err
	}
	if base, err = testenv.StartFunctions(); err != nil {
		return err
	}

	// Shard events: emulator → bridge (fixes its quirks) → rollupCounter.
	l, err := net.Listen("tcp", os.Getenv("SHARDCOUNT_TRIGGER_ADDR"))
	if err != nil {
		return fmt.Errorf("listen for trigger events: %w", err)
	}
	bridge = &triggerbridge.Bridge{Target: base, Intercept: intercept}
	go http.Serve(l, bridge)
	return triggerbridge.RegisterAll(context.Background(), host, project, testenv.Database())
}

// intercept lets a test see (and drop) the events of its own counter.
func intercept(d *triggerbridge.Delivery) bool {
	tapsMu.Lock()
	defer tapsMu.Unlock()
	for prefix, tap := range taps {
		if strings.HasPrefix(d.Subject(), prefix) {
			return tap(d)
		}
	}
	return true
}

// tapCounter routes the events of counter id to tap until the test ends.
func tapCounter(t *testing.T, id string, tap func(*triggerbridge.Delivery) bool) {
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

// waitForQuietEvents waits until the events of earlier tests are handled,
// for tests that count documents or roll-up writes of the whole project.
func waitForQuietEvents(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if bridge.Quiet(time.Second) {
			return
		}
	}
	t.Fatal("events kept coming for two minutes")
}

func url(function string) string { return base + "/" + function }

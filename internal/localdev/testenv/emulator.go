package testenv

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
)

// Emulator is a private Firestore emulator a test can stop and start again,
// for failures the shared one must not see.
type Emulator struct {
	tb     testing.TB
	Host   string // host:port
	args   []string
	logDir string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd ends
}

// emulatorLauncher is the emulator's launcher script: scripts/test.sh exports
// SHARDCOUNT_EMULATOR_LAUNCHER (the one it found); without it the Debian
// package's path is tried.
func emulatorLauncher() string {
	return cmp.Or(os.Getenv("SHARDCOUNT_EMULATOR_LAUNCHER"), "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator")
}

// emulatorStartTimeout is generous: on a cold CI machine the JVM starts
// while the race-enabled test binaries are still compiling on both cores.
const emulatorStartTimeout = 3 * time.Minute

// StartEmulator starts a private emulator on host ("" for a free port),
// with extra flags such as --functions_emulator=HOST:PORT.
func StartEmulator(tb testing.TB, host string, args ...string) *Emulator {
	tb.Helper()
	launcher := emulatorLauncher()
	if _, err := os.Stat(launcher); err != nil {
		NeedEmulators(tb, fmt.Errorf("no Firestore emulator launcher at %s (set SHARDCOUNT_EMULATOR_LAUNCHER): %w", launcher, err))
	}
	if host == "" {
		var err error
		if host, err = FreeAddr(); err != nil {
			tb.Fatal(err)
		}
	}
	e := &Emulator{tb: tb, Host: host, args: args, logDir: tb.TempDir()}
	e.Start()
	tb.Cleanup(e.Stop)
	return e
}

// Start starts the emulator (again) on its port and waits until it
// answers; its data starts empty. If it exits or does not answer in time,
// the test fails with the end of its log.
func (e *Emulator) Start() {
	e.tb.Helper()
	host, port, _ := net.SplitHostPort(e.Host)
	logPath := filepath.Join(e.logDir, "emulator.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		e.tb.Fatal(err)
	}
	defer log.Close() // the child keeps its own descriptor
	e.cmd = exec.Command(emulatorLauncher(), append([]string{"start", "--host=" + host, "--port=" + port}, e.args...)...)
	e.cmd.Stdout, e.cmd.Stderr = log, log
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the script starts java as a child
	if err := e.cmd.Start(); err != nil {
		e.tb.Fatal(err)
	}
	e.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); close(exited) }(e.cmd, e.exited)
	deadline := time.Now().Add(emulatorStartTimeout)
	for {
		if resp, err := http.Get("http://" + e.Host + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-e.exited:
			e.tb.Fatalf("the private emulator on %s exited while starting; its log ends:\n%s", e.Host, logTail(logPath))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("the private emulator on %s did not answer within %v; its log ends:\n%s", e.Host, emulatorStartTimeout, logTail(logPath))
		}
	}
}

// logTail returns the last lines of the file at path.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// Stop stops the emulator and its java process.
func (e *Emulator) Stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
	e.cmd = nil
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", e.Host); err != nil {
			return
		} else {
			c.Close()
		}
	}
}

// ServeTriggers receives the trigger events of the emulator at emulatorHost
// on addr (the address it was started with --functions_emulator=), hands
// them to the functions at target through a bridge, and registers the
// catalog's triggers for project. The listener closes when the test ends.
func ServeTriggers(tb testing.TB, emulatorHost, project, addr, target string) *triggerbridge.Bridge {
	tb.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	bridge := &triggerbridge.Bridge{Target: target}
	go http.Serve(l, bridge)
	if err := triggerbridge.RegisterAll(context.Background(), emulatorHost, project, Database()); err != nil {
		tb.Fatal(err)
	}
	return bridge
}

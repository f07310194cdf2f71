package testenv

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
)

// Emulator is a private Firestore emulator a test can stop and start again,
// for failures the shared one must not see.
type Emulator struct {
	tb   testing.TB
	Host string // host:port
	args []string
	cmd  *exec.Cmd
}

// StartEmulator starts a private emulator on host ("" for a free port),
// with extra flags such as --functions_emulator=HOST:PORT. scripts/test.sh
// exports SHARDCOUNT_EMULATOR_LAUNCHER (the cloud_firestore_emulator script
// it found); without it the Debian package's path is tried.
func StartEmulator(tb testing.TB, host string, args ...string) *Emulator {
	tb.Helper()
	launcher := cmp.Or(os.Getenv("SHARDCOUNT_EMULATOR_LAUNCHER"), "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator")
	if _, err := os.Stat(launcher); err != nil {
		NeedEmulators(tb, fmt.Errorf("no Firestore emulator launcher at %s (set SHARDCOUNT_EMULATOR_LAUNCHER): %w", launcher, err))
	}
	if host == "" {
		var err error
		if host, err = FreeAddr(); err != nil {
			tb.Fatal(err)
		}
	}
	e := &Emulator{tb: tb, Host: host, args: args}
	e.Start()
	tb.Cleanup(e.Stop)
	return e
}

// Start starts the emulator (again) on its port and waits until it
// answers; its data starts empty.
func (e *Emulator) Start() {
	e.tb.Helper()
	host, port, _ := net.SplitHostPort(e.Host)
	launcher := cmp.Or(os.Getenv("SHARDCOUNT_EMULATOR_LAUNCHER"), "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator")
	e.cmd = exec.Command(launcher, append([]string{"start", "--host=" + host, "--port=" + port}, e.args...)...)
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the script starts java as a child
	if err := e.cmd.Start(); err != nil {
		e.tb.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + e.Host + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	e.tb.Fatalf("the private emulator on %s did not start", e.Host)
}

// Stop stops the emulator and its java process.
func (e *Emulator) Stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	e.cmd.Wait()
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
	if err := triggerbridge.RegisterAll(context.Background(), emulatorHost, project); err != nil {
		tb.Fatal(err)
	}
	return bridge
}

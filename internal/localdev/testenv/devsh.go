package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Dev is scripts/dev.sh running on free ports.
type Dev struct {
	// Ports maps each of dev.sh's default ports to the one this run uses.
	Ports map[string]string
}

// Functions is the base URL of its functions.
func (d *Dev) Functions() string { return "http://127.0.0.1:" + d.Ports["8081"] }

// FirestoreHost is its Firestore emulator, as FIRESTORE_EMULATOR_HOST.
func (d *Dev) FirestoreHost() string { return "127.0.0.1:" + d.Ports["8080"] }

// AuthHost is its Auth emulator, as FIREBASE_AUTH_EMULATOR_HOST.
func (d *Dev) AuthHost() string { return "127.0.0.1:" + d.Ports["9099"] }

// Apply rewrites dev.sh's default ports in s to this run's.
func (d *Dev) Apply(s string) string {
	for from, to := range d.Ports {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// StartDev runs scripts/dev.sh of the repository at root, with env added to
// its environment, on free ports, in project AuthProject (so the Auth
// emulator's sign-ins fit its functions), until the test ends.
func StartDev(t *testing.T, root string, env ...string) *Dev {
	t.Helper()
	return StartDevIn(t, root, filepath.Join("scripts", "dev.sh"), nil, env...)
}

// StartDevIn runs the dev.sh at script (relative to dir) from dir with
// args, as StartDev does.
func StartDevIn(t *testing.T, dir, script string, args []string, env ...string) *Dev {
	t.Helper()
	if _, err := EmulatorHost(); err != nil {
		NeedEmulators(t, err)
	}
	// A port free when chosen may be taken before dev.sh binds it (it
	// builds first): then dev.sh exits, and another set of ports is tried.
	for attempt := 1; ; attempt++ {
		d, out, err := startDev(t, dir, append([]string{script}, args...), env)
		if err == nil {
			return d
		}
		if attempt == 3 || !portTaken.MatchString(out) {
			t.Fatalf("%v:\n%s", err, out)
		}
		t.Logf("%v, again on other ports", err)
	}
}

// portTaken matches what dev.sh and the emulators say of a port in use.
var portTaken = regexp.MustCompile(`(?i)port taken|in use|address already in use|EADDRINUSE|not open on`)

// startDev starts dev.sh once; it returns its output when it did not start.
func startDev(t *testing.T, dir string, command, env []string) (*Dev, string, error) {
	// Ports below the kernel's ephemeral range (32768 and up on Linux),
	// where other tests' FreeAddr (port 0) never lands; the Auth emulator
	// also takes the two ports after its own.
	taken := map[int]bool{}
	pick := func(span int) string {
		for {
			n := 20000 + rand.IntN(12000)
			ok := true
			for i := range span {
				ok = ok && !taken[n+i] && portFree(n+i)
			}
			if ok {
				for i := range span {
					taken[n+i] = true
				}
				return strconv.Itoa(n)
			}
		}
	}
	d := &Dev{Ports: map[string]string{"9099": pick(3), "8080": pick(1), "8081": pick(1), "8082": pick(1), "5173": pick(1), "5001": pick(5)}}
	cmd := exec.Command("bash", command...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "FIRESTORE_PORT="+d.Ports["8080"], "FUNCTIONS_PORT="+d.Ports["8081"], "TRIGGER_PORT="+d.Ports["8082"],
		"AUTH_PORT="+d.Ports["9099"], "WEB_PORT="+d.Ports["5173"], "APP_FUNCTIONS_PORT="+d.Ports["5001"], "PROJECT_ID="+AuthProject(),
		"FIRESTORE_EMULATOR_HOST=", "FIREBASE_AUTH_EMULATOR_HOST=", "AUTH=", "LOG_LEVEL=warn"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // dev.sh stops what it started
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	deadline := time.After(4 * time.Minute)
	for !strings.Contains(out.String(), "Ctrl-C stops everything") {
		select {
		case <-exited:
			return nil, out.String(), errors.New("scripts/dev.sh exited")
		case <-deadline:
			stop()
			return nil, out.String(), errors.New("scripts/dev.sh was not ready within 4 minutes")
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("scripts/dev.sh:\n%s", out.String())
		}
	})
	return d, "", nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// SyncBuffer is a buffer a process writes while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

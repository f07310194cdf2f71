// Package docs runs the examples of the README and docs/ against
// scripts/dev.sh, the way a newcomer would: every curl command aimed at the
// local functions, compared with the answer printed under it, and the
// README's web snippet with the Firebase JS SDK on Node. dev.sh runs on free
// ports, which are the one thing changed in the examples.
package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

var root, _ = filepath.Abs("../..")

// devPorts are dev.sh's default ports and the free ones this run uses.
type devPorts map[string]string // default → this run's

func (p devPorts) apply(s string) string {
	for from, to := range p {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// startDev runs scripts/dev.sh on free ports until the test ends.
func startDev(t *testing.T) devPorts {
	t.Helper()
	if _, err := testenv.EmulatorHost(); err != nil {
		testenv.NeedEmulators(t, err)
	}
	free := func() string {
		addr, err := testenv.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		return port
	}
	// The Auth emulator also takes the two ports after its own.
	var auth string
	for {
		auth = free()
		var n int
		fmt.Sscan(auth, &n)
		if portFree(n+1) && portFree(n+2) {
			break
		}
	}
	ports := devPorts{"8080": free(), "8081": free(), "8082": free(), "9099": auth, "5173": free()}
	cmd := exec.Command("bash", "scripts/dev.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FIRESTORE_PORT="+ports["8080"], "FUNCTIONS_PORT="+ports["8081"], "TRIGGER_PORT="+ports["8082"],
		"AUTH_PORT="+ports["9099"], "WEB_PORT="+ports["5173"], "PROJECT_ID="+testenv.AuthProject(),
		"FIRESTORE_EMULATOR_HOST=", "FIREBASE_AUTH_EMULATOR_HOST=", "AUTH=", "LOG_LEVEL=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // dev.sh stops what it started
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("scripts/dev.sh:\n%s", out.String())
		}
	})
	deadline := time.After(4 * time.Minute)
	for !strings.Contains(out.String(), "Ctrl-C stops everything") {
		select {
		case <-exited:
			t.Fatalf("scripts/dev.sh exited:\n%s", out.String())
		case <-deadline:
			t.Fatalf("scripts/dev.sh was not ready within 4 minutes:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return ports
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// example is one curl command of the docs and the answer printed under it.
type example struct {
	file, command, want string
}

// curlExamples returns the curl commands aimed at the local functions in
// the sh blocks of a markdown file, in order.
func curlExamples(t *testing.T, file string) []example {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var block []string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, block = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, parseBlock(file, block)...)
		case in:
			block = append(block, line)
		}
	}
	return out
}

// parseBlock splits an sh block into curl commands (a command runs until
// the next comment line, curl line or blank line) and their answers (the
// comment lines after it).
func parseBlock(file string, lines []string) []example {
	var out []example
	var cur *example
	flush := func() {
		if cur != nil && strings.Contains(cur.command, "127.0.0.1:8081") && !strings.Contains(cur.command, "…") {
			out = append(out, *cur)
		}
		cur = nil
	}
	inCommand := false
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "curl "):
			flush()
			cur, inCommand = &example{file: file, command: l}, true
		case strings.HasPrefix(trimmed, "#") && cur != nil:
			inCommand = false
			cur.want += strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
		case inCommand && cur != nil && trimmed != "":
			cur.command += "\n" + l
		default:
			inCommand = false
			if trimmed == "" {
				flush()
			}
		}
	}
	flush()
	return out
}

// volatile keys hold values that differ on every run.
var volatile = map[string]bool{"shard": true, "ids": true, "id": true, "as_of": true, "reusable_after": true,
	"created_at": true, "next_page_token": true, "merge_until": true}

var timeLike = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)

// matches compares an answer with the one the docs print: the same keys,
// the same values, except volatile keys and times (any time matches a
// time).
func matches(want, got any, key string) bool {
	if volatile[key] {
		return true
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			if gv, ok := g[k]; !ok || !matches(v, gv, k) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matches(w[i], g[i], key) {
				return false
			}
		}
		return true
	case string:
		g, ok := got.(string)
		return ok && (g == w || key == "start" && timeLike.MatchString(w) && timeLike.MatchString(g) && !strings.HasPrefix(w, "2025"))
	}
	return fmt.Sprint(want) == fmt.Sprint(got)
}

func TestExamples(t *testing.T) {
	ports := startDev(t)
	files := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	more, _ := filepath.Glob(filepath.Join(root, "docs", "*", "*.md"))
	files = append(files, slices.Sorted(slices.Values(append(docs, more...)))...)
	ran := 0
	for _, file := range files {
		for _, ex := range curlExamples(t, file) {
			name := strings.TrimPrefix(ex.file, root+"/")
			ran++
			// A read may wait for the roll-up ("within a second"): retry it.
			read := !strings.Contains(ex.command, "-X POST")
			var got string
			for attempt := 0; ; attempt++ {
				out, err := exec.Command("bash", "-c", ports.apply(ex.command)).Output()
				if err != nil {
					t.Fatalf("%s: %s: %v", name, ex.command, err)
				}
				got = string(bytes.TrimSpace(out))
				if ex.want == "" || answerMatches(ex.want, got) || !read || attempt == 30 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if ex.want != "" && !answerMatches(ex.want, got) {
				t.Errorf("%s:\n%s\nanswered %s\nthe docs say %s", name, ex.command, got, ex.want)
			}
		}
	}
	if ran < 15 {
		t.Errorf("only %d curl examples found: the parser or the docs changed", ran)
	}
	t.Logf("%d curl examples run", ran)

	t.Run("the README's web snippet", func(t *testing.T) { webSnippet(t, ports) })
}

func answerMatches(want, got string) bool {
	var w, g any
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(got), &g) != nil {
		return false
	}
	return matches(w, g, "")
}

// webSnippet runs the README's js block marked "tested: node" with Node and
// the Firebase JS SDK, and waits for the lines its marker says it prints.
func webSnippet(t *testing.T, ports devPorts) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- tested: node, prints (.*?) -->\n```js\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no js block marked <!-- tested: node, prints … -->")
	}
	var wants []string
	for _, w := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(m[1], -1) {
		wants = append(wants, string(w[1]))
	}
	script := filepath.Join(root, fmt.Sprintf(".readme-snippet-%d.mjs", time.Now().UnixNano())) // in the repository, for node_modules
	if err := os.WriteFile(script, []byte(ports.apply(string(m[2]))), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(script)
	cmd := exec.Command("node", script)
	cmd.Dir = root
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	timeout := time.After(90 * time.Second)
	for len(wants) > 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the snippet ended before printing %q; it printed %q\n%s", wants, seen, stderr.String())
			}
			seen = append(seen, l)
			wants = slices.DeleteFunc(wants, func(w string) bool { return l == w })
		case <-timeout:
			t.Fatalf("the snippet did not print %q within 90 s; it printed %q\n%s", wants, seen, stderr.String())
		}
	}
	t.Logf("the snippet printed %q", seen)
}

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLinksResolve: every relative link of the README and docs/ names a
// file of the repository.
func TestLinksResolve(t *testing.T) {
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "bench", "README.md")}
	for _, pattern := range []string{"docs/*.md", "docs/*/*.md"} {
		more, _ := filepath.Glob(filepath.Join(root, pattern))
		files = append(files, more...)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllSubmatch(b, -1) {
			target := string(m[1])
			if strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", strings.TrimPrefix(f, root+"/"), target)
			}
		}
	}
}

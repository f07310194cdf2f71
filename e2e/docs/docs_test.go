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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

var root, _ = filepath.Abs("../..")

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
	dev := testenv.StartDev(t, root)
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
			read := !strings.Contains(ex.command, "-X POST") || strings.Contains(ex.command, "/getCounters")
			var got string
			for attempt := 0; ; attempt++ {
				out, err := exec.Command("bash", "-c", dev.Apply(ex.command)).Output()
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

	t.Run("the README's web snippet", func(t *testing.T) { webSnippet(t, dev) })
}

func answerMatches(want, got string) bool {
	var w, g any
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(got), &g) != nil {
		return false
	}
	return matches(w, g, "")
}

// webSnippet runs the README's js block marked "tested: node" with Node,
// the Firebase JS SDK and shardcount's client, as it is written (dev.sh's
// addresses in its environment), waits for the lines its marker says it
// prints, and for it to exit on its own.
func webSnippet(t *testing.T, dev *testenv.Dev) {
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
	// In an app that installed the client as the README says
	// (scripts/build-client.sh's package), beside the Firebase JS SDK.
	app := testenv.WebClientApp(t, root)
	if err := os.WriteFile(filepath.Join(app, "snippet.mjs"), m[2], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "snippet.mjs")
	cmd.Dir = app
	cmd.Env = append(os.Environ(), "GCLOUD_PROJECT="+testenv.AuthProject(), "FIRESTORE_EMULATOR_HOST="+dev.FirestoreHost(),
		"FIREBASE_AUTH_EMULATOR_HOST="+dev.AuthHost(), "FUNCTIONS_EMULATOR_HOST="+strings.TrimPrefix(dev.Functions(), "http://"))
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
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
	// It exits on its own once done: nothing left open.
	exited := make(chan error, 1)
	go func() {
		for range lines { // what it prints after
		}
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the snippet exited with %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("the snippet printed %q and did not exit within 60 s", seen)
	}
	t.Logf("the snippet printed %q", seen)
}

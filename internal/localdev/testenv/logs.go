package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Logs collects the JSON log lines the functions write to stdout, while
// passing everything through to the real stdout (test output included).
type Logs struct {
	real *os.File
	w    *os.File
	done chan struct{}

	mu    sync.Mutex
	lines []map[string]any
}

// CaptureStdout starts collecting what is written to os.Stdout. Call it from
// TestMain before the first request (the functions pick their log output
// when they start) and Close it after m.Run, so no output is lost.
func CaptureStdout() (*Logs, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	l := &Logs{real: os.Stdout, w: w, done: make(chan struct{})}
	os.Stdout = w
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(l.real, sc.Text())
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue // test output and functions-framework's own lines
			}
			l.mu.Lock()
			l.lines = append(l.lines, line)
			l.mu.Unlock()
		}
	}()
	return l, nil
}

// Close restores os.Stdout and waits until everything captured is written.
func (l *Logs) Close() {
	os.Stdout = l.real
	l.w.Close()
	<-l.done
}

// Await is Find, retried for up to two seconds until some line matches:
// a request's line is written after its response, and reaches Logs through
// a pipe.
func (l *Logs) Await(match map[string]any) []map[string]any {
	deadline := time.Now().Add(2 * time.Second)
	for {
		if lines := l.Find(match); len(lines) > 0 || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Find returns the logged lines whose fields include every key and value of
// match.
func (l *Logs) Find(match map[string]any) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range l.lines {
		ok := true
		for k, v := range match {
			if line[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

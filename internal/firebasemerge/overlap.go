package firebasemerge

import (
	"fmt"
	"strings"
)

// shardcountDocuments are example paths of every kind of document
// shardcount keeps (under /databases/{database}/documents): a rule of the
// app's that matches one of them adds to what shardcount's block allows
// there, since rules add up.
var shardcountDocuments = []string{
	"counters/c", "counters/c/shards/0", "counters/c/members/u", "counters/c/idempotency_keys/k",
	"counters/c/rollup_slots/s", "counters/c/windows/w", "instruments/i", "shardcount/reconcile",
}

// Overlaps returns a warning for each match statement outside
// shardcount's block whose path, wildcards included, also matches
// shardcount's documents, naming its line.
func Overlaps(rules string) []string {
	begin, end, hasBlock := span(rules)
	var warnings []string
	for _, m := range matches(rules) {
		if hasBlock && m.offset >= begin && m.offset < end {
			continue
		}
		for _, doc := range shardcountDocuments {
			if globMatch(m.path, "/databases/(default)/documents/"+doc) {
				warnings = append(warnings, fmt.Sprintf("line %d: `match %s` also matches shardcount's %s: rules add up, so it may allow more than shardcount's block does there (a list, a write); narrow it",
					m.line, m.own, doc))
				break
			}
		}
	}
	return warnings
}

// match is one match statement: its own path, the full path with the
// enclosing ones, and where it is.
type match struct {
	own, path    string
	line, offset int
}

// matches lists the match statements of a rules file, each with its full
// path (the enclosing matches' paths before its own), skipping comments
// and strings.
func matches(rules string) []match {
	var out []match
	type open struct {
		path  string
		depth int
	}
	var stack []open
	depth, line := 0, 1
	full := func() string {
		var b strings.Builder
		for _, o := range stack {
			b.WriteString(o.path)
		}
		return b.String()
	}
	for i := 0; i < len(rules); i++ {
		c := rules[i]
		switch {
		case c == '\n':
			line++
		case strings.HasPrefix(rules[i:], "//"):
			for i < len(rules) && rules[i] != '\n' {
				i++
			}
			line++
		case strings.HasPrefix(rules[i:], "/*"):
			j := strings.Index(rules[i+2:], "*/")
			if j < 0 {
				return out
			}
			line += strings.Count(rules[i:i+2+j], "\n")
			i += j + 3
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(rules) && rules[j] != c && rules[j] != '\n' {
				if rules[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case c == '{':
			depth++
		case c == '}':
			depth--
			for len(stack) > 0 && stack[len(stack)-1].depth > depth {
				stack = stack[:len(stack)-1]
			}
		case strings.HasPrefix(rules[i:], "match") && (i == 0 || !isWord(rules[i-1])) && i+5 < len(rules) && !isWord(rules[i+5]):
			// match PATH { — the path runs to the brace, wildcards and all.
			j := strings.IndexByte(rules[i:], '\n')
			if j < 0 {
				j = len(rules) - i
			}
			rest := rules[i+5 : i+j]
			k := strings.LastIndexByte(rest, '{')
			if k < 0 {
				continue
			}
			own := strings.TrimSpace(rest[:k])
			stack = append(stack, open{path: own, depth: depth + 1})
			out = append(out, match{own: own, path: full(), line: line, offset: i})
			i += 5 + k - 1 // the scanner goes on from the brace, which opens the scope
		}
	}
	return out
}

func isWord(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// globMatch reports whether a rules path pattern matches a path: {x}
// stands for one segment, {x=**} for any number of them, zero included.
func globMatch(pattern, path string) bool {
	return globSegments(split(pattern), split(path))
}

func split(p string) []string {
	var out []string
	for s := range strings.SplitSeq(strings.Trim(p, "/"), "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func globSegments(pattern, path []string) bool {
	if len(pattern) == 0 {
		return len(path) == 0
	}
	p := pattern[0]
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "=**}") {
		for i := 0; i <= len(path); i++ {
			if globSegments(pattern[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	if len(path) == 0 {
		return false
	}
	if p != path[0] && !(strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}")) {
		return false
	}
	return globSegments(pattern[1:], path[1:])
}

package firebasemerge

import (
	"fmt"
	"strings"
)

// documentsOf are the paths of every kind of document each group of
// shardcount keeps (under /databases/{database}/documents), * standing
// for any document id: a rule of the app's that matches one of them, or
// one document of one of them, adds to what shardcount's block allows
// there, since rules add up.
var documentsOf = map[string][]string{
	"counters": {"counters/*", "counters/*/shards/*", "counters/*/members/*", "counters/*/idempotency_keys/*",
		"counters/*/rollup_slots/*", "counters/*/windows/*", "counters/*/bound/guard", "counter_activity/*", "shardcount/reconcile"},
	"instruments": {"instruments/*"},
}

// Overlaps returns a warning for each match statement outside
// shardcount's block that grants something (an allow whose condition is
// not false) and whose path, wildcards included, also matches a document
// of the groups the block holds, naming its line.
func Overlaps(rules string) []string {
	begin, end, err := blockSpan(rules)
	var groups []string
	if err == nil {
		groups = Groups(rules[begin:end])
	}
	var warnings []string
	for _, m := range scan(rules).matches {
		if err == nil && m.offset >= begin && m.offset < end || !m.grants {
			continue
		}
	docs:
		for _, g := range groups {
			for _, doc := range documentsOf[g] {
				if globMatch(m.path, "/databases/(default)/documents/"+doc) {
					doc = strings.ReplaceAll(doc, "*", "{id}")
					warnings = append(warnings, fmt.Sprintf("line %d: `match %s` also matches shardcount's %s: rules add up, so it may allow more than shardcount's block does there (a list, a write); narrow it",
						m.line, m.own, doc))
					break docs
				}
			}
		}
	}
	return warnings
}

// globMatch reports whether a rules path pattern matches a path, or one
// of the paths a path with * segments stands for: {x} stands for one
// segment, {x=**} for any number of them, zero included; * in the path
// for any one segment of the pattern's (one document of ours).
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
	if p != path[0] && path[0] != "*" && !(strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}")) {
		return false
	}
	return globSegments(pattern[1:], path[1:])
}

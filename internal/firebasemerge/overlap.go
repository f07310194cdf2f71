package firebasemerge

import (
	"fmt"
	"strings"
)

// documentsOf are example paths of every kind of document each group of
// shardcount keeps (under /databases/{database}/documents): a rule of the
// app's that matches one of them adds to what shardcount's block allows
// there, since rules add up.
var documentsOf = map[string][]string{
	"counters": {"counters/c", "counters/c/shards/0", "counters/c/members/u", "counters/c/idempotency_keys/k",
		"counters/c/rollup_slots/s", "counters/c/windows/w", "counter_activity/c", "shardcount/reconcile"},
	"instruments": {"instruments/i"},
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
					warnings = append(warnings, fmt.Sprintf("line %d: `match %s` also matches shardcount's %s: rules add up, so it may allow more than shardcount's block does there (a list, a write); narrow it",
						m.line, m.own, doc))
					break docs
				}
			}
		}
	}
	return warnings
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

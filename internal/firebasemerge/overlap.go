package firebasemerge

import (
	"encoding/json"
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

// Shared returns a warning for each collection of the app's (named by a
// match statement of its rules outside shardcount's block, or by its own
// indexes) that a collection-group rule or a field override of
// shardcount's also applies to: those are not scoped to shardcount's
// documents. An app's collection `members` may be listed by a user whose
// uid its documents hold; an app's collection `windows` has its
// documents deleted once their expire_at passes.
func (o Ours) Shared(rules string, indexes []byte) []string {
	effects := map[string][]string{} // by collection id: what of ours applies to every collection of that name
	for _, m := range scan(o.Block).matches {
		segs := split(m.path)
		if len(segs) >= 2 && strings.HasSuffix(segs[0], "=**}") && m.grants {
			effects[segs[1]] = append(effects[segs[1]], fmt.Sprintf("shardcount's collection-group rule `match %s` (a signed-in user may list the documents whose uid is theirs)", m.path))
		}
	}
	var ours struct {
		FieldOverrides []struct {
			CollectionGroup string `json:"collectionGroup"`
			FieldPath       string `json:"fieldPath"`
			TTL             bool   `json:"ttl"`
		} `json:"fieldOverrides"`
	}
	json.Unmarshal(o.Indexes, &ours)
	for _, f := range ours.FieldOverrides {
		if o.Keep != nil && !o.Keep(f.CollectionGroup) {
			continue
		}
		what := fmt.Sprintf("shardcount's field override of %s, which indexes no query of the app's on it", f.FieldPath)
		if f.TTL {
			what = fmt.Sprintf("shardcount's TTL policy on %s (a document whose %s has passed is deleted)", f.FieldPath, f.FieldPath)
		}
		effects[f.CollectionGroup] = append(effects[f.CollectionGroup], what)
	}
	var warnings []string
	warn := func(coll, where string) {
		if e := effects[coll]; e != nil {
			warnings = append(warnings, fmt.Sprintf("%s names a collection `%s` of the app's, and every collection of that name, the app's too, gets %s: rename it, or check that this is fine",
				where, coll, strings.Join(e, " and ")))
			delete(effects, coll) // once per collection
		}
	}
	begin, end, err := blockSpan(rules)
	for _, m := range scan(rules).matches {
		if err == nil && m.offset >= begin && m.offset < end || ourDocument(m.path) {
			continue
		}
		segs := split(m.path)
		if len(segs) >= 3 && segs[0] == "databases" && strings.HasPrefix(segs[1], "{") && segs[2] == "documents" {
			segs = segs[3:] // whatever the app calls its database wildcard
		}
		for i := 0; i < len(segs); i += 2 {
			if !strings.HasPrefix(segs[i], "{") {
				warn(segs[i], fmt.Sprintf("line %d (`match %s`)", m.line, m.own))
			}
		}
	}
	var rawApp map[string]any
	json.Unmarshal(indexes, &rawApp)
	for _, key := range []string{"indexes", "fieldOverrides"} {
		for _, e := range list(rawApp, key) {
			if g, _ := e["collectionGroup"].(string); !ourEntry(e, o.Indexes) {
				warn(g, "the app's indexes file (an entry of its own)")
			}
		}
	}
	return warnings
}

// ourDocument reports whether a rules path stands for one of shardcount's
// documents (every group's).
func ourDocument(path string) bool {
	for _, docs := range documentsOf {
		for _, doc := range docs {
			if globMatch(path, "/databases/(default)/documents/"+doc) && len(split(path)) == len(split("/databases/(default)/documents/"+doc)) {
				return true
			}
		}
	}
	return false
}

// ourEntry reports whether an entry of an indexes file is one of ours.
func ourEntry(e map[string]any, ours []byte) bool {
	var o map[string]any
	json.Unmarshal(ours, &o)
	for _, key := range []string{"indexes", "fieldOverrides"} {
		for _, x := range list(o, key) {
			if canonical(x) == canonical(e) {
				return true
			}
		}
	}
	return false
}

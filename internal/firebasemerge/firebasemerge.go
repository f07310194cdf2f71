// Package firebasemerge brings shardcount's Firestore rules and indexes
// into an existing Firebase app's files without touching the app's own.
//
// The rules are one marked block (between the BEGIN and END lines of
// firestore.rules) spliced into the app's `match /databases/{database}/
// documents` scope, or replacing the block already there; the block's
// switch keeps the value the app gave it. The indexes and field overrides
// (single-field exemptions and TTL policies) are added to the app's
// firestore.indexes.json unless already there; an override the app set
// differently for the same field is a conflict. Merging twice changes
// nothing the second time.
package firebasemerge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The block's markers; Block finds them by these prefixes.
const (
	beginMarker = "// ---- BEGIN shardcount rules"
	endMarker   = "// ---- END shardcount rules ----"
)

// switchRule is the block's switch, whose value a merge keeps.
var switchRule = regexp.MustCompile(`(function shardcountAnonymousCounterReads\(\) \{\s*return )(true|false)(;)`)

// Block returns the marked block of a rules file (from the BEGIN line to
// the END line, indented as they are), or an error if it has none.
func Block(rules string) (string, error) {
	begin, end, ok := span(rules)
	if !ok {
		return "", errors.New("firebasemerge: no shardcount block (its BEGIN and END lines) in the rules")
	}
	return rules[begin:end], nil
}

// span returns where the block starts (the start of the BEGIN line) and
// ends (after the END line's newline).
func span(rules string) (int, int, bool) {
	b := strings.Index(rules, beginMarker)
	e := strings.Index(rules, endMarker)
	if b < 0 || e < b {
		return 0, 0, false
	}
	begin := strings.LastIndex(rules[:b], "\n") + 1
	end := e + len(endMarker)
	if nl := strings.Index(rules[end:], "\n"); nl >= 0 {
		end += nl + 1
	} else {
		end = len(rules)
	}
	return begin, end, true
}

// HasBlock reports whether rules hold block exactly, the switch aside.
func HasBlock(rules, block string) bool {
	have, err := Block(rules)
	return err == nil && switchRule.ReplaceAllString(have, "${1}false$3") == switchRule.ReplaceAllString(block, "${1}false$3")
}

// documentsScope finds the line that opens the documents scope.
var documentsScope = regexp.MustCompile(`(?m)^[ \t]*match\s+/databases/\{\w+\}/documents\s*\{[ \t]*\n`)

// otherCounterRules finds an app's own rules on shardcount's collections.
var otherCounterRules = regexp.MustCompile(`match\s+/(counters|instruments)/`)

// Rules returns the app's rules with block in it: replacing the block
// already there (keeping its switch's value), or inserted at the top of
// the documents scope. Warnings say what the caller should check by hand.
func Rules(app, block string) (string, []string, error) {
	var warnings []string
	if begin, end, ok := span(app); ok {
		if m := switchRule.FindStringSubmatch(app[begin:end]); m != nil {
			block = switchRule.ReplaceAllString(block, "${1}"+m[2]+"$3")
		}
		app = app[:begin] + block + app[end:]
	} else {
		loc := documentsScope.FindStringIndex(app)
		if loc == nil {
			return "", nil, errors.New("firebasemerge: the app's rules have no `match /databases/{database}/documents {` line to put the block in")
		}
		app = app[:loc[1]] + "\n" + block + "\n" + app[loc[1]:]
	}
	outside := app
	if begin, end, ok := span(app); ok {
		outside = app[:begin] + app[end:]
	}
	if otherCounterRules.MatchString(outside) {
		warnings = append(warnings, "the app's own rules also match /counters or /instruments: rules add up, so they may allow more than shardcount's block (a list, a write); check them")
	}
	return app, warnings, nil
}

// Indexes returns the app's firestore.indexes.json with every index and
// field override of ours added, unless there already. The app's own
// entries, and any other key, stay as they are.
func Indexes(app, ours []byte) ([]byte, error) {
	var a, o map[string]any
	if len(bytes.TrimSpace(app)) == 0 {
		a = map[string]any{}
	} else if err := json.Unmarshal(app, &a); err != nil {
		return nil, fmt.Errorf("firebasemerge: the app's indexes: %w", err)
	}
	if err := json.Unmarshal(ours, &o); err != nil {
		return nil, fmt.Errorf("firebasemerge: our indexes: %w", err)
	}
	indexes, err := merge(list(a, "indexes"), list(o, "indexes"), func(e map[string]any) string { return canonical(e) }, nil)
	if err != nil {
		return nil, err
	}
	overrideKey := func(e map[string]any) string { return fmt.Sprint(e["collectionGroup"], "/", e["fieldPath"]) }
	overrides, err := merge(list(a, "fieldOverrides"), list(o, "fieldOverrides"), overrideKey, func(have, want map[string]any) error {
		return fmt.Errorf("firebasemerge: the app sets the field %s differently (%s); shardcount needs %s", overrideKey(want), canonical(have), canonical(want))
	})
	if err != nil {
		return nil, err
	}
	a["indexes"], a["fieldOverrides"] = indexes, overrides
	out, err := json.MarshalIndent(a, "", "  ")
	return append(out, '\n'), err
}

func list(m map[string]any, key string) []map[string]any {
	var out []map[string]any
	items, _ := m[key].([]any)
	for _, it := range items {
		if e, ok := it.(map[string]any); ok {
			out = append(out, e)
		}
	}
	return out
}

// merge appends each entry of ours whose key the app's entries lack; an
// entry with the same key but other content is a conflict, unless
// conflict is nil (the key is the whole entry).
func merge(app, ours []map[string]any, key func(map[string]any) string, conflict func(have, want map[string]any) error) ([]any, error) {
	have := map[string]map[string]any{}
	out := make([]any, 0, len(app)+len(ours))
	for _, e := range app {
		have[key(e)] = e
		out = append(out, e)
	}
	for _, e := range ours {
		h, ok := have[key(e)]
		switch {
		case !ok:
			out = append(out, e)
			have[key(e)] = e
		case conflict != nil && canonical(h) != canonical(e):
			return nil, conflict(h, e)
		}
	}
	return out, nil
}

// canonical is an entry's JSON with sorted keys, for comparisons.
func canonical(e map[string]any) string {
	b, _ := json.Marshal(e) // maps marshal with sorted keys
	return string(b)
}

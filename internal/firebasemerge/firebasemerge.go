// Package firebasemerge brings shardcount's Firestore rules and indexes
// into an existing Firebase app's files without touching the app's own, and
// checks, by meaning rather than by bytes, that an app's files hold them.
//
// The rules are one marked block (between the BEGIN and END lines of
// firestore.rules) spliced into the app's `match /databases/{database}/
// documents` scope, or replacing the block already there; the block's
// switch keeps the value the app gave it. Inside the block each group of
// functions (counters, instruments) has a section of its own, and an app
// that deploys some groups gets only theirs. The indexes and field
// overrides (single-field exemptions and TTL policies) of those groups are
// added to the app's indexes file unless already there; an override the
// app set differently for the same field is a conflict. Merging twice
// changes nothing the second time.
//
// Which files are the app's is the app's firebase.json's to say (AppFiles).
package firebasemerge

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The block's markers; Block finds them by these prefixes.
const (
	beginMarker = "// ---- BEGIN shardcount rules"
	endMarker   = "// ---- END shardcount rules ----"
)

// A group's section in the block: from "// ---- group NAME ----" to
// "// ---- end of group NAME ----".
var section = regexp.MustCompile(`(?m)^[ \t]*// ---- group (\w+) ----\r?\n(?s:.*?)^[ \t]*// ---- end of group (\w+) ----\r?\n(\r?\n)?`)

// switchRule is the block's switch, whose value a merge keeps.
var switchRule = regexp.MustCompile(`(function shardcountAnonymousCounterReads\(\) \{\s*return )(true|false)(;)`)

// Block returns the marked block of a rules file (from the BEGIN line to
// the END line, indented as they are) with the sections of groups only;
// nil groups keeps every section.
func Block(rules string, groups []string) (string, error) {
	begin, end, err := blockSpan(rules)
	if err != nil {
		return "", err
	}
	block := rules[begin:end]
	if groups == nil {
		return block, nil
	}
	return section.ReplaceAllStringFunc(block, func(s string) string {
		if m := section.FindStringSubmatch(s); slices.Contains(groups, m[1]) {
			return s
		}
		return ""
	}), nil
}

// Groups returns the groups whose sections a block holds.
func Groups(block string) []string {
	var out []string
	for _, m := range section.FindAllStringSubmatch(block, -1) {
		out = append(out, m[1])
	}
	return out
}

// blockSpan returns where the block starts (the start of its BEGIN line)
// and ends (after its END line's newline). Its lines must be real comments
// (not inside a /* */ one) directly in the documents scope: a block
// anywhere else would not apply to shardcount's documents.
func blockSpan(rules string) (int, int, error) {
	var begin, end *marker
	for _, m := range scan(rules).markers {
		switch {
		case m.begin && begin == nil:
			begin = &m
		case !m.begin && begin != nil && end == nil:
			end = &m
		}
	}
	switch {
	case begin == nil || end == nil:
		return 0, 0, errNoBlock
	case !documentsPath.MatchString(begin.scope) || end.scope != begin.scope:
		return 0, 0, fmt.Errorf("firebasemerge: shardcount's block is inside %q, not directly in `match /databases/{database}/documents`, where its rules apply", begin.scope)
	}
	stop := len(rules)
	if nl := strings.IndexByte(rules[end.offset:], '\n'); nl >= 0 {
		stop = end.offset + nl + 1
	}
	return begin.offset, stop, nil
}

var errNoBlock = errors.New("firebasemerge: no shardcount block (its BEGIN and END lines) in the rules")

// documentsPath is the documents scope's full path, within the service.
var documentsPath = regexp.MustCompile(`^/databases/\{\w+\}/documents$`)

// HasBlock reports whether rules hold block: the same lines, whatever
// their indentation and blank lines, the switch aside, and the sections of
// block's groups; sections of other groups may be there too (an app that
// deploys some groups now may have deployed others before: its files
// decide). A merge narrows them to block's (HasExactly).
func HasBlock(rules, block string) bool {
	have, err := Block(rules, Groups(block))
	return err == nil && meaning(have) == meaning(block)
}

// HasExactly is HasBlock with no section of another group.
func HasExactly(rules, block string) bool {
	have, err := Block(rules, nil)
	return err == nil && meaning(have) == meaning(block)
}

// meaning is a block's text as compared: the switch at false, each line
// trimmed, blank lines dropped.
func meaning(block string) string {
	block = switchRule.ReplaceAllString(block, "${1}false$3")
	var lines []string
	for l := range strings.Lines(block) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// documentsScope returns where the documents scope's body begins: after
// the line of its opening brace, as the rules language reads the file
// (not in a comment or a string).
func documentsScope(rules string) (int, bool) {
	for _, m := range scan(rules).matches {
		if !documentsPath.MatchString(m.path) {
			continue
		}
		at := m.brace + 1
		if nl := strings.IndexByte(rules[at:], '\n'); nl >= 0 && strings.TrimSpace(rules[at:at+nl]) == "" {
			return at + nl + 1, true
		}
		return 0, false // more on the brace's line: no line of its own to put the block after
	}
	return 0, false
}

// Rules returns the app's rules with block in it: replacing the block
// already there (keeping its switch's value), or inserted at the top of
// the documents scope. Warnings say what the caller should check by hand:
// each rule of the app's that also matches shardcount's documents.
func Rules(app, block string) (string, []string, error) {
	begin, end, err := blockSpan(app)
	switch {
	case err == nil:
		if m := switchRule.FindStringSubmatch(app[begin:end]); m != nil {
			block = switchRule.ReplaceAllString(block, "${1}"+m[2]+"$3")
		}
		app = app[:begin] + block + app[end:]
	case err != errNoBlock:
		return "", nil, err
	default:
		at, ok := documentsScope(app)
		if !ok {
			return "", nil, errors.New("firebasemerge: the app's rules have no `match /databases/{database}/documents {` line (its brace ending the line) to put the block in")
		}
		app = app[:at] + "\n" + block + "\n" + app[at:]
	}
	return app, Overlaps(app), nil
}

package firebasemerge

import (
	"regexp"
	"strings"
)

// scanned is a rules file as scan reads it.
type scanned struct {
	matches []match
	markers []marker
}

// match is one match statement: its own path, the full path with the
// enclosing ones, where it is, and whether one of its own allow statements
// (not a nested match's) can grant anything: a condition other than false.
type match struct {
	own, path    string
	line, offset int
	brace        int // the offset of the brace that opens its scope
	grants       bool
}

// marker is a BEGIN or END line of the block.
type marker struct {
	begin  bool
	offset int // of the line's start
	scope  string
}

// wildcard is a path segment's {name} or {name=**}.
var wildcard = regexp.MustCompile(`^\{\w+(=\*\*)?\}`)

// allowStatement is an allow statement's condition, from after "allow".
var allowStatement = regexp.MustCompile(`^[\w\s,]*?(?::\s*if\s+([^;]*))?;`)

// scan reads a rules file as the rules language does, comments and
// strings skipped and braces counted: its match statements with the paths
// of the ones around them, their allow statements, and the block's marker
// lines where they are real comments, with the scope they are in.
func scan(rules string) scanned {
	var out scanned
	type open struct {
		path  string
		depth int
		match int // its index in out.matches
	}
	var stack []open
	depth := 0
	line := 1
	full := func() string {
		var b strings.Builder
		for _, o := range stack {
			b.WriteString(o.path)
		}
		return b.String()
	}
	word := func(i int, w string) bool {
		return strings.HasPrefix(rules[i:], w) && (i == 0 || !isWord(rules[i-1])) && (i+len(w) == len(rules) || !isWord(rules[i+len(w)]))
	}
	// skipSpace returns the index of the first byte at or after i that is
	// neither space nor comment, counting lines.
	skipSpace := func(i int) int {
		for i < len(rules) {
			switch {
			case rules[i] == '\n':
				line++
				i++
			case rules[i] == ' ' || rules[i] == '\t' || rules[i] == '\r':
				i++
			case strings.HasPrefix(rules[i:], "//"):
				for i < len(rules) && rules[i] != '\n' {
					i++
				}
			case strings.HasPrefix(rules[i:], "/*"):
				j := strings.Index(rules[i+2:], "*/")
				if j < 0 {
					return len(rules)
				}
				line += strings.Count(rules[i:i+2+j], "\n")
				i += j + 4
			default:
				return i
			}
		}
		return i
	}
	for i := 0; i < len(rules); i++ {
		c := rules[i]
		switch {
		case c == '\n':
			line++
		case strings.HasPrefix(rules[i:], "//"):
			start := strings.LastIndexByte(rules[:i], '\n') + 1
			if rest := rules[i:]; strings.HasPrefix(rest, beginMarker) || strings.HasPrefix(rest, endMarker) {
				out.markers = append(out.markers, marker{begin: strings.HasPrefix(rest, beginMarker), offset: start, scope: full()})
			}
			for i < len(rules) && rules[i] != '\n' {
				i++
			}
			i-- // the newline is counted by the loop
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
		case word(i, "allow"):
			if m := allowStatement.FindStringSubmatch(rules[i+5:]); m != nil && len(stack) > 0 {
				if cond := strings.TrimSpace(m[1]); cond != "false" {
					out.matches[stack[len(stack)-1].match].grants = true
				}
			}
		case word(i, "match"):
			// match PATH {: the path's segments may hold {wildcards}, and
			// the opening brace may follow a line later.
			at, startLine := i, line
			j := i + 5
			for j < len(rules) && (rules[j] == ' ' || rules[j] == '\t') {
				j++
			}
			k := j
			for k < len(rules) && !strings.ContainsRune(" \t\r\n", rune(rules[k])) {
				if rules[k] == '{' {
					w := wildcard.FindString(rules[k:])
					if w == "" {
						break
					}
					k += len(w)
					continue
				}
				k++
			}
			own := rules[j:k]
			brace := skipSpace(k)
			if own == "" || brace >= len(rules) || rules[brace] != '{' {
				line = startLine
				continue // not a match statement after all
			}
			stack = append(stack, open{path: own, depth: depth + 1, match: len(out.matches)})
			out.matches = append(out.matches, match{own: own, path: full(), line: startLine, offset: at, brace: brace})
			i = brace - 1 // the loop goes on from the brace, which opens the scope
		}
	}
	return out
}

func isWord(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

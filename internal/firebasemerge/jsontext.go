package firebasemerge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// A merge edits the app's indexes file as text, so that every line of the
// app's stays as it was (indentation, key order, its entries): the diff a
// pull request shows adds shardcount's entries, and at most the comma
// before them. Where the entries of a JSON document are in its text is
// what this file finds.

// span is where a JSON value is in a file: [start, end).
type span struct{ start, end int }

// jsonArray is an array of the top-level object: its brackets and
// elements.
type jsonArray struct {
	open, close int // of [ and ]
	elems       []span
}

// jsonObject is the top-level object: its braces, and each member's key
// and value (an array's elements too).
type jsonObject struct {
	open, close int
	members     []jsonMember
}

type jsonMember struct {
	key      string
	keyStart int
	value    span
	array    *jsonArray // when the value is an array
}

// scanObject finds the members of the top-level object of b, which must
// be valid JSON.
func scanObject(b []byte) (jsonObject, error) {
	if !json.Valid(b) {
		return jsonObject{}, errors.New("not valid JSON")
	}
	s := &jsonScanner{b: b}
	s.ws()
	if s.i >= len(b) || b[s.i] != '{' {
		return jsonObject{}, errors.New("not a JSON object")
	}
	o := jsonObject{open: s.i}
	s.i++
	for s.ws(); b[s.i] != '}'; s.ws() {
		m := jsonMember{keyStart: s.i}
		key := s.value()
		json.Unmarshal(b[key.start:key.end], &m.key) // valid JSON: a string
		s.ws()
		s.i++ // :
		s.ws()
		if b[s.i] == '[' {
			m.array = &jsonArray{}
		}
		m.value = s.valueInto(m.array)
		o.members = append(o.members, m)
		if s.ws(); b[s.i] == ',' {
			s.i++
		}
	}
	o.close = s.i
	return o, nil
}

type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) && strings.IndexByte(" \t\r\n", s.b[s.i]) >= 0 {
		s.i++
	}
}

func (s *jsonScanner) value() span { return s.valueInto(nil) }

// valueInto skips a value; an array's brackets and elements go into a
// when it is not nil.
func (s *jsonScanner) valueInto(a *jsonArray) span {
	start := s.i
	switch s.b[s.i] {
	case '"':
		for s.i++; s.b[s.i] != '"'; s.i++ {
			if s.b[s.i] == '\\' {
				s.i++
			}
		}
		s.i++
	case '{', '[':
		closing := byte('}')
		if s.b[s.i] == '[' {
			closing = ']'
		}
		if a != nil {
			a.open = s.i
		}
		s.i++
		for s.ws(); s.b[s.i] != closing; s.ws() {
			if closing == '}' {
				s.value() // a key
				s.ws()
				s.i++ // :
				s.ws()
			}
			v := s.value()
			if a != nil {
				a.elems = append(a.elems, v)
			}
			if s.ws(); s.b[s.i] == ',' {
				s.i++
			}
		}
		if a != nil {
			a.close = s.i
		}
		s.i++
	default: // a number, true, false or null
		for s.i < len(s.b) && strings.IndexByte(",]} \t\r\n", s.b[s.i]) < 0 {
			s.i++
		}
	}
	return span{start, s.i}
}

// lineIndent is the whitespace before position i on its line, and
// whether only whitespace precedes i there.
func lineIndent(b []byte, i int) (string, bool) {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	ind := string(b[start:i])
	return ind, strings.Trim(ind, " \t\r") == ""
}

// edit replaces b[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// applyEdits applies non-overlapping edits.
func applyEdits(b []byte, edits []edit) []byte {
	var out []byte
	at := 0
	for _, e := range sortedEdits(edits) {
		out = append(out, b[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, b[at:]...)
}

func sortedEdits(edits []edit) []edit {
	out := append([]edit(nil), edits...)
	for i := 1; i < len(out); i++ { // insertion sort: a handful of edits
		for j := i; j > 0 && (out[j].start < out[j-1].start || out[j].start == out[j-1].start && out[j].end < out[j-1].end); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// style is how a file is laid out: compact (one line), or indented by
// unit per level.
type style struct {
	compact bool
	unit    string
	eol     string // "\n", or "\r\n" in a CRLF file
}

// styleOf reads a file's layout from its top-level members' indentation,
// and its line ends.
func styleOf(b []byte, o jsonObject) style {
	eol := "\n"
	if bytes.Contains(b, []byte("\r\n")) {
		eol = "\r\n"
	}
	if len(o.members) == 0 || !bytes.Contains(b[o.open:o.close], []byte("\n")) {
		if bytes.Contains(b[o.open:o.close], []byte("\n")) || len(o.members) == 0 {
			return style{unit: "  ", eol: eol}
		}
		return style{compact: true, eol: eol}
	}
	ind, ok := lineIndent(b, o.members[0].keyStart)
	if !ok || ind == "" {
		return style{compact: true, eol: eol}
	}
	return style{unit: ind, eol: eol}
}

// reindent lays out an entry of shardcount's file (indented by two spaces
// a level, its first line at its element's place, the others at ours
// deeper) at indent, by st's unit per level.
func reindent(raw []byte, ours string, indent string, st style) string {
	if st.compact {
		var b bytes.Buffer
		json.Compact(&b, raw)
		return b.String()
	}
	lines := strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		l := strings.TrimPrefix(lines[i], ours)
		n := len(l) - len(strings.TrimLeft(l, " "))
		lines[i] = indent + strings.Repeat(st.unit, n/2) + l[n:]
	}
	return strings.Join(lines, st.eol)
}

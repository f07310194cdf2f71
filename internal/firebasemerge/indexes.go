package firebasemerge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Keep says which collection groups of shardcount's indexes to bring into
// an app: those of the groups it deploys. Nil keeps all.
type Keep func(collectionGroup string) bool

// Indexes returns the app's indexes file with every index and field
// override of ours that keep keeps added, unless there already, and those
// of ours that keep does not keep removed (an earlier merge of more
// groups brought them). It edits the file as text: the app's own lines
// stay as they were, its indentation and key order too, and ours are laid
// out in its style (see jsontext.go).
func Indexes(app, ours []byte, keep Keep) ([]byte, error) {
	a, o, drop, err := parseBoth(app, ours, keep)
	if err != nil {
		return nil, err
	}
	for _, want := range list(o, "fieldOverrides") {
		for _, have := range list(a, "fieldOverrides") {
			if overrideKey(have) == overrideKey(want) && canonical(have) != canonical(want) && !drop[canonical(have)] {
				return nil, fmt.Errorf("firebasemerge: the app sets the field %s differently (%s); shardcount needs %s", overrideKey(want), canonical(have), canonical(want))
			}
		}
	}
	if len(bytes.TrimSpace(app)) == 0 {
		app = []byte("{}\n")
	}
	appObj, err := scanObject(app)
	if err != nil {
		return nil, fmt.Errorf("firebasemerge: the app's indexes: %w", err)
	}
	oursObj, err := scanObject(ours)
	if err != nil {
		return nil, fmt.Errorf("firebasemerge: our indexes: %w", err)
	}
	st := styleOf(app, appObj)
	var edits []edit
	var missingMembers []string // members to add, laid out
	for _, key := range []string{"indexes", "fieldOverrides"} {
		id := canonical
		if key == "fieldOverrides" {
			id = overrideKey
		}
		have := map[string]bool{}
		for _, e := range list(a, key) {
			if !drop[canonical(e)] {
				have[id(e)] = true
			}
		}
		var add [][]byte // ours, raw, in our order
		if m := member(oursObj, key); m != nil && m.array != nil {
			for _, e := range m.array.elems {
				raw := ours[e.start:e.end]
				var entry map[string]any
				json.Unmarshal(raw, &entry)
				if g, _ := entry["collectionGroup"].(string); (keep == nil || keep(g)) && !have[id(entry)] {
					have[id(entry)] = true
					add = append(add, raw)
				}
			}
		}
		m := member(appObj, key)
		switch {
		case m == nil && len(add) > 0:
			indent := st.unit
			if len(appObj.members) > 0 {
				indent, _ = lineIndent(app, appObj.members[0].keyStart)
			}
			missingMembers = append(missingMembers, fmt.Sprintf("%q: [%s]", key, elements(add, indent+st.unit, indent, st)))
		case m != nil && m.array == nil:
			return nil, fmt.Errorf("firebasemerge: the app's indexes: %s is not a list", key)
		case m != nil:
			edits = append(edits, arrayEdits(app, m, add, drop, st)...)
		}
	}
	if len(missingMembers) > 0 {
		edits = append(edits, membersEdit(app, appObj, missingMembers, st))
	}
	out := applyEdits(app, edits)
	// What the edits made must be what they meant: ours, and nothing of
	// the groups dropped.
	if lacks, err := MissingIndexes(out, ours, keep); err != nil || len(lacks) > 0 {
		return nil, fmt.Errorf("firebasemerge: the merged indexes lack %v (%v): a bug; the app's file is left as it was", lacks, err)
	}
	if unused, err := UnusedIndexes(out, ours, keep); err != nil || len(unused) > 0 {
		return nil, fmt.Errorf("firebasemerge: the merged indexes keep %v (%v): a bug; the app's file is left as it was", unused, err)
	}
	return out, nil
}

func member(o jsonObject, key string) *jsonMember {
	for i := range o.members {
		if o.members[i].key == key {
			return &o.members[i]
		}
	}
	return nil
}

// elements lays out entries as the interior of an array whose elements
// are at indent and whose ] is at closeIndent.
func elements(entries [][]byte, indent, closeIndent string, st style) string {
	if len(entries) == 0 {
		return ""
	}
	var out []string
	for _, e := range entries {
		out = append(out, reindent(e, oursElementIndent, indent, st))
	}
	if st.compact {
		return strings.Join(out, ",")
	}
	return st.eol + indent + strings.Join(out, ","+st.eol+indent) + st.eol + closeIndent
}

// oursElementIndent is how deep shardcount's own file indents an entry.
const oursElementIndent = "    "

// arrayEdits adds entries to the end of an array of the app's, after its
// last element kept, and removes its elements that drop holds.
func arrayEdits(app []byte, m *jsonMember, add [][]byte, drop map[string]bool, st style) []edit {
	arr := m.array
	dropped := make([]bool, len(arr.elems))
	lastKept := -1
	for i, e := range arr.elems {
		var entry map[string]any
		json.Unmarshal(app[e.start:e.end], &entry)
		dropped[i] = entry != nil && drop[canonical(entry)]
		if !dropped[i] {
			lastKept = i
		}
	}
	keyIndent, _ := lineIndent(app, m.keyStart)
	closeIndent, ok := lineIndent(app, arr.close)
	if !ok {
		closeIndent = keyIndent
	}
	if lastKept < 0 { // nothing of the app's in it: its interior anew
		if len(add) == 0 && len(arr.elems) == 0 {
			return nil
		}
		return []edit{{arr.open + 1, arr.close, elements(add, closeIndent+st.unit, closeIndent, st)}}
	}
	var edits []edit
	for i, e := range arr.elems {
		if dropped[i] && i < lastKept {
			edits = append(edits, edit{e.start, arr.elems[i+1].start, ""})
		}
	}
	anchor := arr.elems[lastKept].end
	if last := len(arr.elems) - 1; lastKept < last {
		edits = append(edits, edit{anchor, arr.elems[last].end, ""}) // the trailing ones, with the comma before them
	}
	if len(add) == 0 {
		return edits
	}
	indent, ok := lineIndent(app, arr.elems[0].start)
	if !ok {
		indent = closeIndent + st.unit
	}
	sep := "," + st.eol + indent
	if st.compact {
		sep = ","
	}
	if len(arr.elems) >= 2 {
		sep = string(app[arr.elems[0].end:arr.elems[1].start])
	}
	var text strings.Builder
	for _, e := range add {
		text.WriteString(sep + reindent(e, oursElementIndent, indent, st))
	}
	return append(edits, edit{anchor, anchor, text.String()})
}

// membersEdit adds members (laid out) to the top-level object: after its
// last member, or into an empty one.
func membersEdit(app []byte, o jsonObject, members []string, st style) edit {
	if len(o.members) == 0 {
		if st.compact {
			return edit{o.open + 1, o.close, strings.Join(members, ",")}
		}
		return edit{o.open + 1, o.close, st.eol + st.unit + strings.Join(members, ","+st.eol+st.unit) + st.eol}
	}
	indent, _ := lineIndent(app, o.members[0].keyStart)
	sep := "," + st.eol + indent
	if st.compact {
		sep = ","
	}
	at := o.members[len(o.members)-1].value.end
	return edit{at, at, sep + strings.Join(members, sep)}
}

// MissingIndexes lists what the app's indexes file lacks of ours (those
// keep keeps), compared by meaning: key order and formatting aside.
func MissingIndexes(app, ours []byte, keep Keep) ([]string, error) {
	a, o, _, err := parseBoth(app, ours, keep)
	if err != nil {
		return nil, err
	}
	var missing []string
	have := map[string]bool{}
	for _, e := range list(a, "indexes") {
		have[canonical(e)] = true
	}
	for _, e := range list(o, "indexes") {
		if !have[canonical(e)] {
			missing = append(missing, "the index "+canonical(e))
		}
	}
	overrides := map[string]string{}
	for _, e := range list(a, "fieldOverrides") {
		overrides[overrideKey(e)] = canonical(e)
	}
	for _, e := range list(o, "fieldOverrides") {
		if overrides[overrideKey(e)] != canonical(e) {
			missing = append(missing, "the field override "+canonical(e))
		}
	}
	return missing, nil
}

// UnusedIndexes lists the entries of ours that keep does not keep (of
// groups not deployed) and the app's file holds, exactly.
func UnusedIndexes(app, ours []byte, keep Keep) ([]string, error) {
	a, _, drop, err := parseBoth(app, ours, keep)
	if err != nil {
		return nil, err
	}
	var unused []string
	for _, key := range []string{"indexes", "fieldOverrides"} {
		for _, e := range list(a, key) {
			if c := canonical(e); drop[c] {
				unused = append(unused, "shardcount's "+map[string]string{"indexes": "index", "fieldOverrides": "field override"}[key]+" "+c)
			}
		}
	}
	return unused, nil
}

// parseBoth parses the app's indexes (empty: none) and ours, keeping of
// ours what keep keeps; drop holds the canonical forms of the others (of
// groups not deployed).
func parseBoth(app, ours []byte, keep Keep) (a, o map[string]any, drop map[string]bool, err error) {
	if len(bytes.TrimSpace(app)) == 0 {
		a = map[string]any{}
	} else if err := json.Unmarshal(app, &a); err != nil {
		return nil, nil, nil, fmt.Errorf("firebasemerge: the app's indexes: %w", err)
	}
	if err := json.Unmarshal(ours, &o); err != nil {
		return nil, nil, nil, fmt.Errorf("firebasemerge: our indexes: %w", err)
	}
	drop = map[string]bool{}
	if keep != nil {
		for _, key := range []string{"indexes", "fieldOverrides"} {
			var kept []any
			for _, e := range list(o, key) {
				if g, _ := e["collectionGroup"].(string); keep(g) {
					kept = append(kept, e)
				} else {
					drop[canonical(e)] = true
				}
			}
			o[key] = kept
		}
	}
	return a, o, drop, nil
}

func overrideKey(e map[string]any) string {
	return fmt.Sprint(e["collectionGroup"], "/", e["fieldPath"])
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

// compositeDefaults are what a composite index means when it does not
// say (the Firebase CLI writes them out when it exports indexes).
var compositeDefaults = map[string]string{"queryScope": "COLLECTION", "apiScope": "ANY_API", "density": "SPARSE_ALL"}

// canonical is an entry's meaning as JSON: keys sorted, a composite
// index's defaults written out, and a field override's indexes in a fixed
// order.
func canonical(e map[string]any) string {
	c := map[string]any{}
	for k, v := range e {
		c[k] = v
	}
	if _, ok := c["fields"]; ok {
		for k, v := range compositeDefaults {
			if c[k] == nil {
				c[k] = v
			}
		}
	}
	if ixs, ok := c["indexes"].([]any); ok {
		sorted := slices.Clone(ixs)
		slices.SortFunc(sorted, func(x, y any) int {
			bx, _ := json.Marshal(x)
			by, _ := json.Marshal(y)
			return bytes.Compare(bx, by)
		})
		c["indexes"] = sorted
	}
	b, _ := json.Marshal(c) // maps marshal with sorted keys
	return string(b)
}

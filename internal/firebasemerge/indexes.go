package firebasemerge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Keep says which collection groups of shardcount's indexes to bring into
// an app: those of the groups it deploys. Nil keeps all.
type Keep func(collectionGroup string) bool

// Indexes returns the app's indexes file with every index and field
// override of ours that keep keeps added, unless there already, and those
// of ours that keep does not keep removed (an earlier merge of more
// groups brought them). The app's own entries, and any other key, stay as
// they are.
func Indexes(app, ours []byte, keep Keep) ([]byte, error) {
	a, o, drop, err := parseBoth(app, ours, keep)
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"indexes", "fieldOverrides"} {
		if _, ok := a[key]; ok {
			kept := []any{}
			for _, e := range list(a, key) {
				if !drop[canonical(e)] {
					kept = append(kept, e)
				}
			}
			a[key] = kept
		}
	}
	indexes, err := merge(list(a, "indexes"), list(o, "indexes"), canonical, nil)
	if err != nil {
		return nil, err
	}
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

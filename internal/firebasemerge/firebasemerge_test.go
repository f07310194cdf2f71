package firebasemerge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRulesMergeIsIdempotentAndKeepsTheApp(t *testing.T) {
	ours := readFile(t, "../../firestore.rules")
	block, err := Block(ours, nil)
	if err != nil {
		t.Fatal(err)
	}
	app := readFile(t, "testdata/app/firestore.rules")
	once, warnings, err := Rules(app, block)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("merge: %v %v", err, warnings)
	}
	if !HasBlock(once, block) || !strings.Contains(once, "match /posts/{postId}") || !strings.Contains(once, "match /users/{uid}") {
		t.Fatalf("merged rules lack the block or the app's rules:\n%s", once)
	}
	twice, _, err := Rules(once, block)
	if err != nil || twice != once {
		t.Fatalf("a second merge changed the file (%v):\n%s", err, twice)
	}
	// The app flips the switch; a later merge keeps it.
	flipped := strings.Replace(once, "return false;", "return true;", 1)
	again, _, err := Rules(flipped, block)
	if err != nil || again != flipped || !HasBlock(again, block) {
		t.Fatalf("the switch was not kept (%v):\n%s", err, again)
	}
	// An old block is replaced by the current one.
	stale := strings.Replace(once, "allow get: if request.auth != null || shardcountAnonymousCounterReads();", "allow read: if true;", 1)
	if HasBlock(stale, block) {
		t.Fatal("HasBlock accepts a changed block")
	}
	if fixed, _, _ := Rules(stale, block); fixed != once {
		t.Fatalf("a stale block was not replaced:\n%s", fixed)
	}
	// Meaning, not formatting: the block reindented is the same block.
	reindented := strings.ReplaceAll(once, "\n    ", "\n\t")
	if !HasBlock(reindented, block) {
		t.Error("HasBlock refuses the block reindented")
	}
}

// TestGroupsHaveSectionsOfTheirOwn: an app that deploys the counters only
// gets no rule of the instruments example.
func TestGroupsHaveSectionsOfTheirOwn(t *testing.T) {
	ours := readFile(t, "../../firestore.rules")
	all, _ := Block(ours, nil)
	counters, err := Block(ours, []string{"counters"})
	if err != nil {
		t.Fatal(err)
	}
	if got := Groups(all); !slices.Equal(got, []string{"counters", "instruments"}) {
		t.Fatalf("the block's groups: %v", got)
	}
	if strings.Contains(counters, "instruments") || !strings.Contains(counters, "match /counters/{counterId}") ||
		!strings.Contains(counters, "shardcountAnonymousCounterReads") || !strings.Contains(counters, endMarker) {
		t.Fatalf("the counters' block:\n%s", counters)
	}
	merged, _, _ := Rules(readFile(t, "testdata/app/firestore.rules"), all)
	// An app merged for every group holds the counters' (its files decide
	// what it deploys), but not exactly: a merge for the counters only
	// takes the instruments' section out.
	if !HasBlock(merged, counters) || HasExactly(merged, counters) {
		t.Error("a block with both groups: HasBlock of the counters' must hold, HasExactly not")
	}
	if crlf := strings.ReplaceAll(merged, "\n", "\r\n"); !HasBlock(crlf, counters) || !slices.Equal(AppGroups(crlf), []string{"counters", "instruments"}) {
		t.Errorf("a CRLF file: its groups are %v", AppGroups(crlf))
	}
	if HasBlock(strings.Replace(merged, "match /counters/{counterId}", "match /counterz/{counterId}", 1), counters) {
		t.Error("a block whose counters' section differs holds the counters'")
	}
	if narrowed, _, _ := Rules(merged, counters); !HasBlock(narrowed, counters) || strings.Contains(narrowed, "/instruments/") {
		t.Errorf("merging the counters' block did not drop the instruments':\n%s", narrowed)
	}
}

// TestOverlapsNameTheLine: any rule of the app's that also matches
// shardcount's documents is a warning with its line, wildcards included;
// shardcount's own block is not.
func TestOverlapsNameTheLine(t *testing.T) {
	block, _ := Block(readFile(t, "../../firestore.rules"), nil)
	for _, tc := range []struct {
		name, inner string
		warns       bool
	}{
		{"test mode", "match /{document=**} { allow read, write: if true; }", true},
		{"its own counters rule", "match /counters/{id} { allow read: if true; }", true},
		{"any collection", "match /{coll}/{doc} { allow read: if true; }", true},
		{"a collection group", "match /{path=**}/members/{m} { allow list: if true; }", true},
		{"nested", "match /counters/{id} {\n      match /shards/{s} { allow read: if true; }\n    }", true},
		{"the app's own", "match /posts/{id} { allow read: if true; }\n    // match /counters/{id} in a comment", false},
		{"another database", "", false},
		{"the brace a line later", "match /counters/{id}\n    { allow read: if true; }", true},
		{"two on a line", "match /posts/{id} { allow read: if true; } match /counters/{id} { allow get: if true; }", true},
		{"a comment with a brace", "match /posts/{id} { // }\n allow read: if true; }\n    match /counters/{id} { allow read; }", true},
		{"deny all", "match /{document=**} { allow read, write: if false; }", false},
		{"one counter by its id", "match /counters/site-total { allow read, write: if true; }", true},
		{"one counter's shards", "match /counters/site-total/shards/{s} { allow write: if true; }", true},
		{"a collection of the app's named like ours", "match /counters_archive/{id} { allow read: if true; }", false},
		{"in a block comment", "/* match /{document=**} { allow read, write: if true; } */", false},
	} {
		app := "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    " + tc.inner + "\n  }\n}\n"
		merged, warnings, err := Rules(app, block)
		if err != nil {
			t.Fatal(err)
		}
		if tc.warns != (len(warnings) > 0) {
			t.Errorf("%s: warnings %v", tc.name, warnings)
			continue
		}
		// Each warning names a line that holds the match it quotes.
		lines := strings.Split(merged, "\n")
		for _, w := range warnings {
			var n int
			var own string
			if _, err := fmt.Sscanf(w, "line %d: `match %s", &n, &own); err != nil || n < 1 || n > len(lines) ||
				!strings.Contains(lines[n-1], "match "+strings.TrimSuffix(own, "`")) {
				t.Errorf("%s: %q names no line of its match", tc.name, w)
			}
		}
	}
	if _, _, err := Rules("not rules at all", block); err == nil {
		t.Error("a file without a documents scope was merged")
	}
	// An app that deploys the counters only: its rule for the instruments
	// example's documents is its own business.
	counters, _ := Block(readFile(t, "../../firestore.rules"), []string{"counters"})
	app := "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    match /instruments/{i} { allow read: if true; }\n  }\n}\n"
	if _, warnings, _ := Rules(app, counters); len(warnings) > 0 {
		t.Errorf("warnings about a group not deployed: %v", warnings)
	}
}

// TestABlockThatDoesNotApplyIsNoBlock: a block inside a comment, or under
// another match, holds the right lines and applies to nothing; it passed
// for merged.
func TestABlockThatDoesNotApplyIsNoBlock(t *testing.T) {
	block, _ := Block(readFile(t, "../../firestore.rules"), nil)
	wrap := func(inner string) string {
		return "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n" + inner + "\n  }\n}\n"
	}
	for name, rules := range map[string]string{
		"in a block comment":  wrap("/*\n" + block + "*/"),
		"under another match": wrap("match /posts/{id} {\n" + block + "}"),
	} {
		if HasBlock(rules, block) {
			t.Errorf("%s: HasBlock accepts it", name)
		}
		if _, _, err := Rules(rules, block); name == "under another match" && err == nil {
			t.Errorf("%s: merged into the wrong scope", name)
		}
	}
}

func TestIndexesCompareByMeaning(t *testing.T) {
	// The Firebase CLI's export writes every default out: the same index.
	ours := []byte(`{"indexes":[{"collectionGroup":"windows","fields":[{"fieldPath":"start","order":"ASCENDING"}]}]}`)
	exported := []byte(`{"indexes":[{"collectionGroup":"windows","queryScope":"COLLECTION","apiScope":"ANY_API","density":"SPARSE_ALL","fields":[{"fieldPath":"start","order":"ASCENDING"}]}]}`)
	if missing, err := MissingIndexes(exported, ours, nil); err != nil || len(missing) > 0 {
		t.Errorf("an exported index with its defaults written out: missing %v %v", missing, err)
	}
}

func TestIndexesMergeIsIdempotentAndKeepsTheApp(t *testing.T) {
	ours := []byte(readFile(t, "../../firestore.indexes.json"))
	app := []byte(readFile(t, "testdata/app/firestore.indexes.json"))
	once, err := Indexes(app, ours, nil)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Indexes(once, ours, nil)
	if err != nil || string(twice) != string(once) {
		t.Fatalf("a second merge changed the file (%v)", err)
	}
	var a, o, m struct {
		Indexes        []any
		FieldOverrides []any
	}
	json.Unmarshal(app, &a)
	json.Unmarshal(ours, &o)
	json.Unmarshal(once, &m)
	if len(m.Indexes) != len(a.Indexes)+len(o.Indexes) || len(m.FieldOverrides) != len(a.FieldOverrides)+len(o.FieldOverrides) {
		t.Errorf("merged %d indexes and %d overrides, want %d and %d", len(m.Indexes), len(m.FieldOverrides),
			len(a.Indexes)+len(o.Indexes), len(a.FieldOverrides)+len(o.FieldOverrides))
	}
	if empty, err := Indexes(nil, ours, nil); err != nil || !strings.Contains(string(empty), "idempotency_keys") {
		t.Errorf("an app without indexes: %v", err)
	}
	conflict := []byte(`{"fieldOverrides":[{"collectionGroup":"idempotency_keys","fieldPath":"expire_at","indexes":[{"order":"ASCENDING","queryScope":"COLLECTION"}]}]}`)
	if _, err := Indexes(conflict, ours, nil); err == nil || !strings.Contains(err.Error(), "idempotency_keys/expire_at") {
		t.Errorf("a conflicting override: %v, want an error naming it", err)
	}
	onlyCounters := func(g string) bool { return g != "instruments" }
	counters, _ := Indexes(nil, ours, onlyCounters)
	if strings.Contains(string(counters), `"instruments"`) {
		t.Errorf("the counters' indexes hold the instruments':\n%s", counters)
	}
	// Merged for every group, then for the counters only: ours of the
	// instruments go, the app's own stay.
	if unused, err := UnusedIndexes(once, ours, onlyCounters); err != nil || len(unused) == 0 {
		t.Errorf("an app merged for every group holds no index of the instruments': %v %v", unused, err)
	}
	narrowed, err := Indexes(once, ours, onlyCounters)
	if unused, _ := UnusedIndexes(narrowed, ours, onlyCounters); err != nil || len(unused) > 0 || strings.Contains(string(narrowed), `"instruments"`) {
		t.Errorf("merged for the counters only, it still holds %v (%v)", unused, err)
	}
	var n struct{ Indexes []any }
	json.Unmarshal(narrowed, &n)
	if missing, _ := MissingIndexes(narrowed, ours, onlyCounters); len(missing) > 0 || len(n.Indexes) < len(a.Indexes) {
		t.Errorf("narrowed, it lacks %v, or the app's own (%d of %d)", missing, len(n.Indexes), len(a.Indexes))
	}
}

// TestMissingComparesMeaning: the check passes shardcount's own file and
// the same content in another key order or indentation, and names what an
// app lacks.
func TestMissingComparesMeaning(t *testing.T) {
	ours := []byte(readFile(t, "../../firestore.indexes.json"))
	if missing, err := MissingIndexes(ours, ours, nil); err != nil || len(missing) != 0 {
		t.Errorf("shardcount's own indexes lack %v (%v)", missing, err)
	}
	var doc map[string]any
	json.Unmarshal(ours, &doc)
	compact, _ := json.Marshal(doc) // keys sorted, no indentation
	if missing, _ := MissingIndexes(compact, ours, nil); len(missing) != 0 {
		t.Errorf("the same indexes in another key order lack %v", missing)
	}
	if missing, _ := MissingIndexes([]byte(`{"indexes":[]}`), ours, nil); len(missing) == 0 {
		t.Error("an empty file lacks nothing")
	}
}

func TestAppFilesFollowFirebaseJSON(t *testing.T) {
	dir := t.TempDir()
	f, err := AppFiles(dir, DefaultDatabase)
	if err != nil || f.Rules != filepath.Join(dir, "firestore.rules") || f.Config != "" {
		t.Errorf("no firebase.json: %+v %v", f, err)
	}
	os.WriteFile(filepath.Join(dir, "firebase.json"), []byte(`{"hosting":{"public":"public"},"firestore":{"rules":"firestore/app.rules","indexes":"firestore/app.indexes.json"}}`), 0o644)
	if f, err := AppFiles(dir, DefaultDatabase); err != nil || f.Rules != filepath.Join(dir, "firestore/app.rules") || f.Indexes != filepath.Join(dir, "firestore/app.indexes.json") || !f.Declared {
		t.Errorf("firebase.json names its files: %+v %v", f, err)
	}
	os.WriteFile(filepath.Join(dir, "firebase.json"), []byte(`{"firestore":[{"database":"(default)","rules":"a.rules"},{"database":"likes","rules":"likes.rules","indexes":"likes.json"}]}`), 0o644)
	if f, err := AppFiles(dir, "likes"); err != nil || f.Rules != filepath.Join(dir, "likes.rules") || f.Indexes != filepath.Join(dir, "likes.json") {
		t.Errorf("a named database's entry: %+v %v", f, err)
	}
	if _, err := AppFiles(dir, "other"); err == nil {
		t.Error("a database firebase.json does not declare")
	}
	// An entry without "indexes": firebase deploy would not deploy the
	// file the merge writes, and the merge says so.
	f, err = AppFiles(dir, DefaultDatabase)
	if err != nil || !slices.Equal(f.Unnamed, []string{"indexes"}) {
		t.Fatalf("an entry without indexes: %+v %v", f, err)
	}
	ours, err := LoadOurs("../..", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, warnings, err := ours.Merge(f)
	if err != nil || !slices.ContainsFunc(warnings, func(w string) bool {
		return strings.Contains(w, `names no indexes file: add "indexes": "firestore.indexes.json"`)
	}) {
		t.Errorf("the merge's warnings: %v %v", warnings, err)
	}
	os.WriteFile(filepath.Join(dir, "firebase.json"), []byte(`{"hosting":{}}`), 0o644)
	if f, err := AppFiles(dir, DefaultDatabase); err != nil || f.Declared || f.Rules != filepath.Join(dir, "firestore.rules") {
		t.Errorf("firebase.json without firestore: %+v %v", f, err)
	}
}

// TestTheBlockGoesInTheRealScope: a commented-out documents scope above
// the real one took the block (inside the comment); every later merge
// added another.
func TestTheBlockGoesInTheRealScope(t *testing.T) {
	block, _ := Block(readFile(t, "../../firestore.rules"), []string{"counters"})
	app := "rules_version = '2';\nservice cloud.firestore {\n  /* the old rules:\n  match /databases/{database}/documents {\n    match /x/{y} { allow read; }\n  */\n  match /databases/{database}/documents {\n    match /posts/{p} { allow read; }\n  }\n}\n"
	once, _, err := Rules(app, block)
	if err != nil {
		t.Fatal(err)
	}
	twice, _, err := Rules(once, block)
	if err != nil || twice != once || !HasBlock(once, block) || strings.Count(once, beginMarker) != 1 {
		t.Fatalf("merged into the commented-out scope (%v):\n%s", err, twice)
	}
	if strings.Index(once, beginMarker) < strings.Index(once, "*/") {
		t.Fatalf("the block is inside the comment:\n%s", once)
	}
}

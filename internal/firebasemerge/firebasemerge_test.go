package firebasemerge

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRulesMergeIsIdempotentAndKeepsTheApp(t *testing.T) {
	ours := read(t, "../../firestore.rules")
	block, err := Block(ours)
	if err != nil {
		t.Fatal(err)
	}
	app := read(t, "testdata/app/firestore.rules")
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
}

func TestRulesMergeWarnsAndRefuses(t *testing.T) {
	block, _ := Block(read(t, "../../firestore.rules"))
	_, warnings, err := Rules("service cloud.firestore {\n  match /databases/{db}/documents {\n    match /counters/{id} { allow read: if true; }\n  }\n}\n", block)
	if err != nil || len(warnings) != 1 {
		t.Errorf("an app with its own counters rule: %v %v, want one warning", err, warnings)
	}
	if _, _, err := Rules("not rules at all", block); err == nil {
		t.Error("a file without a documents scope was merged")
	}
}

func TestIndexesMergeIsIdempotentAndKeepsTheApp(t *testing.T) {
	ours := []byte(read(t, "../../firestore.indexes.json"))
	app := []byte(read(t, "testdata/app/firestore.indexes.json"))
	once, err := Indexes(app, ours)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Indexes(once, ours)
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
	if empty, err := Indexes(nil, ours); err != nil || !strings.Contains(string(empty), "idempotency_keys") {
		t.Errorf("an app without indexes: %v", err)
	}
	conflict := []byte(`{"fieldOverrides":[{"collectionGroup":"idempotency_keys","fieldPath":"expire_at","indexes":[{"order":"ASCENDING","queryScope":"COLLECTION"}]}]}`)
	if _, err := Indexes(conflict, ours); err == nil || !strings.Contains(err.Error(), "idempotency_keys/expire_at") {
		t.Errorf("a conflicting override: %v, want an error naming it", err)
	}
}

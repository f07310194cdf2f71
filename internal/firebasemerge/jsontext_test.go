package firebasemerge

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTheIndexesMergeKeepsEveryLine: whatever the app's layout, a merge
// keeps every line of its file in order (a comma may end the line before
// ours), adds ours in its style, and a second merge changes nothing.
func TestTheIndexesMergeKeepsEveryLine(t *testing.T) {
	ours := []byte(readFile(t, "../../firestore.indexes.json"))
	keep := func(g string) bool { return g != "instruments" }
	for name, app := range map[string]string{
		"two spaces":        "{\n  \"indexes\": [\n    {\"collectionGroup\": \"posts\", \"queryScope\": \"COLLECTION\", \"fields\": [{\"fieldPath\": \"a\", \"order\": \"ASCENDING\"}, {\"fieldPath\": \"b\", \"order\": \"ASCENDING\"}]}\n  ],\n  \"fieldOverrides\": []\n}\n",
		"tabs, keys first":  "{\n\t\"fieldOverrides\": [\n\t\t{\"collectionGroup\": \"posts\", \"fieldPath\": \"body\", \"indexes\": []}\n\t],\n\t\"indexes\": []\n}\n",
		"one line":          `{"indexes":[],"fieldOverrides":[{"collectionGroup":"posts","fieldPath":"body","indexes":[]}]}`,
		"no overrides key":  "{\n    \"indexes\": [\n    ]\n}\n",
		"an empty object":   "{}\n",
		"other keys around": "{\n  \"$schema\": \"x\",\n  \"indexes\": [],\n  \"fieldOverrides\": [],\n  \"extra\": {\"a\": [1, 2]}\n}\n",
		"an empty file":     "",
		"CRLF":              "{\r\n  \"indexes\": [\r\n    {\"collectionGroup\": \"posts\", \"fields\": [{\"fieldPath\": \"a\", \"order\": \"ASCENDING\"}, {\"fieldPath\": \"b\", \"order\": \"ASCENDING\"}]}\r\n  ]\r\n}\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			merged, err := Indexes([]byte(app), ours, keep)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(merged) {
				t.Fatalf("not JSON:\n%s", merged)
			}
			if strings.Contains(app, "\r\n") && strings.Count(string(merged), "\n") != strings.Count(string(merged), "\r\n") {
				t.Errorf("a CRLF file got lines ending in LF alone")
			}
			unix := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
			before, after := strings.Split(unix(app), "\n"), strings.Split(unix(string(merged)), "\n")
			i := 0
			for _, l := range after {
				// An empty list or object of the app's opens to hold ours.
				b := strings.TrimSuffix(before[i%len(before)], ",")
				opened := (strings.HasSuffix(b, "[]") || strings.HasSuffix(b, "{}")) && l == b[:len(b)-1]
				if i < len(before) && (l == before[i] || l == before[i]+"," || opened) {
					i++
				}
			}
			if app != "" && !strings.Contains(app, "\n") {
				i = len(before) // one line: its every byte but the insertions
				if !strings.HasPrefix(string(merged), `{"indexes":[`) || !strings.Contains(string(merged), `{"collectionGroup":"posts","fieldPath":"body","indexes":[]}`) {
					t.Errorf("the one-line file's own entries moved:\n%s", merged)
				}
			}
			if i != len(before) {
				t.Errorf("lines of the app's changed (kept %d of %d):\n%s", i, len(before), merged)
			}
			if lacks, _ := MissingIndexes(merged, ours, keep); len(lacks) > 0 {
				t.Errorf("the merge lacks %v", lacks)
			}
			again, err := Indexes(merged, ours, keep)
			if err != nil {
				t.Fatal(err)
			}
			if lacks, _ := MissingIndexes(merged, ours, keep); len(lacks) == 0 && string(again) != string(merged) {
				t.Errorf("a second merge changed the file:\n%s", again)
			}
		})
	}
}

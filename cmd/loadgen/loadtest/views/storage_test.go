package views

import "testing"

// TestDocumentSizeAsFirestoreBillsIt: the example of Firestore's storage
// size page, a task of four fields at users/jeff/tasks/my_task_id, is
// 147 bytes; a full resource name counts from its documents' path.
func TestDocumentSizeAsFirestoreBillsIt(t *testing.T) {
	task := map[string]any{"type": "Personal", "done": false, "priority": int64(1), "description": "Learn Cloud Firestore"}
	for _, path := range []string{"users/jeff/tasks/my_task_id", "projects/p/databases/(default)/documents/users/jeff/tasks/my_task_id"} {
		if got := DocumentSize(path, task); got != 147 {
			t.Errorf("%s: %d bytes, want 147", path, got)
		}
	}
	sketch := map[string]any{"sketch": make([]byte, 1000), "at": map[string]any{"n": 2.5, "tags": []any{"a", nil}}}
	if got, want := DocumentSize("c/x", sketch), int64(16+2+2+7+1000+3+2+8+5+2+1+32); got != want {
		t.Errorf("bytes, a map and an array: %d, want %d", got, want)
	}
}

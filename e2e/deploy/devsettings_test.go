// scripts/dev.sh with an app: its settings file, and its own functions.

package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// post sends a JSON body to a function of d and returns the status and
// the answer.
func post(t *testing.T, d *testenv.Dev, function, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(d.Functions()+"/"+function, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDevRunsTheAppsOwnFunctions: from the example app's directory,
// dev.sh --firestore-from . --app-functions runs shardcount with the app's
// settings file (a counter of its kind plays answers; views, a kind of
// dev.sh's own defaults but not of the file, is 404) and the app's own
// Node function in the Firebase CLI's Functions emulator, triggered by
// shardcount's counter documents: the 100th play writes the app's
// notification.
func TestDevRunsTheAppsOwnFunctions(t *testing.T) {
	app := filepath.Join(root, "examples", "app-function")
	if out, err := script(t, app, nil, "firebase-merge.sh", "--check", "--only", "counters", "."); err != nil {
		t.Fatalf("the example app's files lack shardcount's current rules or indexes (run scripts/firebase-merge.sh --only counters examples/app-function): %v\n%s", err, out)
	}
	rel, _ := filepath.Rel(app, filepath.Join(root, "scripts", "dev.sh"))
	d := testenv.StartDevIn(t, app, rel, []string{"--firestore-from", ".", "--app-functions"})

	if status, body := post(t, d, "incrementCounter", `{"counter_id":"views:post-1"}`); status != http.StatusNotFound {
		t.Errorf("a counter of a kind the settings file lacks (dev.sh's own default): %d %s", status, body)
	}
	increments := make([]string, 100)
	for i := range increments {
		increments[i] = `{"counter_id":"plays:post-1"}`
	}
	if status, body := post(t, d, "incrementCounter", `{"increments":[`+strings.Join(increments, ",")+`]}`); status != http.StatusOK || strings.Count(body, `"status":200`) != 100 {
		t.Fatalf("100 plays of the settings file's kind: %d %s", status, body)
	}
	// The roll-up writes the counter document within about a cadence; the
	// app's function then writes its notification. A minute covers a
	// busy machine many times over.
	url := "http://" + d.FirestoreHost() + "/v1/projects/" + testenv.AuthProject() + "/databases/(default)/documents/notifications/plays:post-1-100"
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer owner")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			var doc struct {
				Fields struct {
					Count struct{ IntegerValue string }
				}
			}
			json.Unmarshal(b, &doc)
			if doc.Fields.Count.IntegerValue != "100" {
				t.Errorf("the notification says %s plays, want 100: %s", doc.Fields.Count.IntegerValue, b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notification a minute after the 100th play (%d %s)", resp.StatusCode, bytes.TrimSpace(b))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDevRefusesAShellSettingTheFileDecides: dev.sh, like the deploy,
// refuses a setting of the shell's that differs from the file's.
func TestDevRefusesAShellSettingTheFileDecides(t *testing.T) {
	out, err := script(t, filepath.Join(root, "examples", "app-function"), []string{"COUNTER_KINDS={}"}, "dev.sh", "--firestore-from", ".")
	if err == nil || !strings.Contains(out, "COUNTER_KINDS is set in this shell ('{}'), and "+filepath.Join(root, "examples", "app-function", "shardcount.env.yaml")) {
		t.Errorf("dev.sh with other kinds in the shell: %v\n%s", err, out)
	}
}

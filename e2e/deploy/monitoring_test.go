package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMetricNamesAgree: the metrics docs/operations/observability.md lists
// are the ones the code records, and the dashboard's and alerts' queries
// name only those.
func TestMetricNamesAgree(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/operations/observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## Metrics"):]
	section = section[:strings.Index(section, "\n## ")]
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	recorded := map[string]bool{}
	name := regexp.MustCompile(`"(shardcount\.[a-z_.]+)"`)
	filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, _ := os.ReadFile(path)
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			if !strings.HasSuffix(m[1], ".yaml") { // a file's name: the settings file
				recorded[m[1]] = true
			}
		}
		return nil
	})
	for n := range recorded {
		if !documented[n] {
			t.Errorf("the code records %s, which observability.md does not list", n)
		}
	}
	for n := range documented {
		if strings.HasPrefix(n, "shardcount.") && !recorded[n] {
			t.Errorf("observability.md lists %s, which no code records", n)
		}
	}
	files, _ := filepath.Glob(filepath.Join(root, "monitoring", "*", "*.json"))
	top, _ := filepath.Glob(filepath.Join(root, "monitoring", "*.json"))
	queried := regexp.MustCompile(`\{\\"([a-z_.]+?)(_bucket|_count|_sum)?\\"`)
	for _, f := range append(files, top...) {
		b, _ := os.ReadFile(f)
		n := 0
		for _, m := range queried.FindAllStringSubmatch(string(b), -1) {
			n++
			if !documented[m[1]] {
				t.Errorf("%s queries %s, which observability.md does not list", filepath.Base(f), m[1])
			}
		}
		if n == 0 {
			t.Errorf("%s queries no metric", filepath.Base(f))
		}
	}
}

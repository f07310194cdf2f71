package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func writeSettings(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestASettingsFileIsCheckedAsADeployedFunctionChecksItsSettings(t *testing.T) {
	for content, want := range map[string]string{
		"COUNTER_KINDS: '{\"likes\": {\"unique\": true}}'\n": "",
		"# comments only\n":                         "",
		"":                                          "",
		"AUTH: 'off'\nCORS_ORIGINS: '*'\n":          "",
		"COUNTER_KINDS: 'not json'\n":               "COUNTER_KINDS: must be a JSON object",
		"ROLLUP_CADENCE: '1h'\n":                    "ROLLUP_CADENCE: must be between",
		"CORS_ORIGINS: '*'\n":                       "only allowed with AUTH=off",
		"PAGE_TOKEN_SECRET: 'x'\n":                  "PAGE_TOKEN_SECRET (line 1): a secret",
		"FIRESTORE_EMULATOR_HOST: 'x:1'\n":          "FIRESTORE_EMULATOR_HOST (line 1): not a setting the functions are deployed with",
		"COUNTERKINDS: '{}'\n":                      "COUNTERKINDS (line 1): not a setting",
		"USER_MAX_DELTA: 5\n":                       "USER_MAX_DELTA (line 1): the value must be a quoted string",
		"AUTH: 'off'\nAUTH: 'off'\n":                "AUTH (line 2): set twice",
		"- AUTH\n":                                  "must be a mapping of settings",
		"AUTH: 'off'\n---\nCOUNTER_KINDS: '{}'\n":   "more than one YAML document",
		"CORS_ORIGINS: 'https://a.example.com;b'\n": "may not hold ';'",
		"LOG_LEVEL: &l 'info'\nAUTH: *l\n":          "AUTH (line 2): write the value itself",
	} {
		_, err := ReadFile(writeSettings(t, content))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
}

func TestTheShellCannotReplaceTheFile(t *testing.T) {
	f, err := ReadFile(writeSettings(t, "COUNTER_KINDS: '{\"likes\": {}}'\n"))
	if err != nil {
		t.Fatal(err)
	}
	shell := env(map[string]string{"COUNTER_KINDS": `{"likes": {}}`, "LOG_LEVEL": "debug", "AUTH": "required", "FIRESTORE_EMULATOR_HOST": "x:1"})
	// The file's own value, a default, and a local setting pass; a setting
	// the file leaves out is a conflict for a deploy, an addition for dev.
	if c := f.Conflicts(shell, false); len(c) != 0 {
		t.Errorf("dev: %v", c)
	}
	if c := f.Conflicts(shell, true); len(c) != 1 || !strings.Contains(c[0].Error(), "LOG_LEVEL is set in this shell ('debug'), which "+f.Path+" does not set") {
		t.Errorf("deploy: %v", c)
	}
	if a := f.Added(shell); len(a) != 2 || a[0] != "AUTH" || a[1] != "LOG_LEVEL" {
		t.Errorf("added: %v", a)
	}
	other := env(map[string]string{"COUNTER_KINDS": "{}"})
	if c := f.Conflicts(other, false); len(c) != 1 || !strings.Contains(c[0].Error(), "COUNTER_KINDS is set in this shell ('{}'), and "+f.Path+" sets") {
		t.Errorf("other kinds: %v", c)
	}
	if c := (File{}).Conflicts(other, true); len(c) != 1 || !strings.Contains(c[0].Error(), "settings come from "+FileName) {
		t.Errorf("no file: %v", c)
	}
}

func TestTheTemplateIsAValidSettingsFile(t *testing.T) {
	f, err := ReadFile(writeSettings(t, Template()))
	if err != nil || len(f.Values) != 1 || f.Values["COUNTER_KINDS"] == "" {
		t.Errorf("the template: %v %v", f.Values, err)
	}
	for _, s := range Settings {
		if s.Scope == Deployed && !strings.Contains(Template(), s.Name+":") {
			t.Errorf("the template lacks %s", s.Name)
		}
	}
}

// TestTheDocsSettingsFilesAreValid reads every settings file the docs
// show (a yaml block of `KEY: 'value'` lines) as deploy.sh reads one.
func TestTheDocsSettingsFilesAreValid(t *testing.T) {
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	docs, _ := filepath.Glob("../../docs/*/*.md")
	more, _ := filepath.Glob("../../docs/*.md")
	found := 0
	for _, doc := range append(append(docs, more...), "../../README.md") {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(b, -1) {
			if !regexp.MustCompile(`(?m)^[A-Z_]+: '`).Match(m[1]) {
				continue // not a settings file
			}
			found++
			if _, err := ReadFile(writeSettings(t, string(m[1]))); err != nil {
				t.Errorf("%s: a settings file that deploy.sh refuses: %v", doc, err)
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d settings files in the docs, want the deploy walkthrough's and the social app's at least", found)
	}
}

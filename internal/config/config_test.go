package config

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth != AuthRequired || c.RollupCadence != time.Second || c.InstrumentShards != 3 ||
		c.IncrementRate != 10 || c.IncrementBurst != 20 || c.LogLevel != slog.LevelInfo || len(c.CORSOrigins) != 0 {
		t.Errorf("defaults = %+v", c)
	}
}

func TestAuthOffAllowsAnyOriginByDefault(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"AUTH": "off"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.CORSOrigins, []string{"*"}) {
		t.Errorf("CORSOrigins = %v", c.CORSOrigins)
	}
}

func TestOrigins(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"CORS_ORIGINS": " https://a.example.com/, http://localhost:5173 "}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://a.example.com", "http://localhost:5173"}; !slices.Equal(c.CORSOrigins, want) {
		t.Errorf("CORSOrigins = %v, want %v", c.CORSOrigins, want)
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	_, err := FromEnv(env(map[string]string{
		"FIRESTORE_EMULATOR_HOST":  "127.0.0.1:8080",
		"AUTH":                     "maybe",
		"CORS_ORIGINS":             "example.com",
		"ROLLUP_CADENCE":           "1ms",
		"INSTRUMENT_SHARDS":        "0",
		"INCREMENT_RATE_PER_USER":  "-1",
		"INCREMENT_BURST_PER_USER": "x",
		"LOG_LEVEL":                "loud",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"GOOGLE_CLOUD_PROJECT", "AUTH", "CORS_ORIGINS", "ROLLUP_CADENCE", "INSTRUMENT_SHARDS",
		"INCREMENT_RATE_PER_USER", "INCREMENT_BURST_PER_USER", "LOG_LEVEL"} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not mention %s: %v", name, err)
		}
	}
}

func TestWildcardOriginNeedsAuthOff(t *testing.T) {
	if _, err := FromEnv(env(map[string]string{"CORS_ORIGINS": "*"})); err == nil || !strings.Contains(err.Error(), "CORS_ORIGINS") {
		t.Errorf("CORS_ORIGINS=* with AUTH=required: err = %v", err)
	}
}

// TestREADMEListsEverySetting keeps the README's settings table in step with
// Settings.
func TestREADMEListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		if !strings.Contains(string(readme), "| `"+s.Name+"` |") {
			t.Errorf("README.md has no row for %s", s.Name)
		}
	}
}

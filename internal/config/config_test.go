package config

import (
	"flag"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/ratelimit"
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
		c.LogLevel != slog.LevelInfo || len(c.CORSOrigins) != 0 || c.FirestoreDeadline != 10*time.Second ||
		!c.GroupCommit || c.GroupCommitMaxBatch != 250 || c.GroupCommitMaxWait != 0 || c.ShardCountCache != 5*time.Minute ||
		c.AutoSharding || c.Deployed || c.Limits[ratelimit.Increment] != ratelimit.UserDefaults[ratelimit.Increment] {
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

func TestProjectFallsBackToGCLOUD_PROJECT(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"GCLOUD_PROJECT": "old"}, "old"},
		{map[string]string{"GCLOUD_PROJECT": "old", "GOOGLE_CLOUD_PROJECT": "new"}, "new"},
	} {
		if c, err := FromEnv(env(tc.vars)); err != nil || c.ProjectID != tc.want {
			t.Errorf("%v: project %q, %v", tc.vars, c.ProjectID, err)
		}
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	_, err := FromEnv(env(map[string]string{
		"FIRESTORE_EMULATOR_HOST": "127.0.0.1:8080",
		"AUTH":                    "maybe",
		"CORS_ORIGINS":            "example.com",
		"ROLLUP_CADENCE":          "1ms",
		"INSTRUMENT_SHARDS":       "0",
		"RATE_LIMITS":             "increment=-1:1",
		"GROUP_COMMIT":            "yes",
		"GROUP_COMMIT_MAX_BATCH":  "500",
		"FIRESTORE_DEADLINE":      "forever",
		"LOG_LEVEL":               "loud",
		"PAGE_TOKEN_SECRET":       "short",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"GOOGLE_CLOUD_PROJECT", "AUTH", "CORS_ORIGINS", "ROLLUP_CADENCE", "INSTRUMENT_SHARDS",
		"RATE_LIMITS", "GROUP_COMMIT", "GROUP_COMMIT_MAX_BATCH", "FIRESTORE_DEADLINE", "LOG_LEVEL", "PAGE_TOKEN_SECRET"} {
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

// TestTheFeedCacheIsWithinTheShardCountCache: an instance answers for a
// deleted counter no longer than SHARD_COUNT_CACHE, the feed's cache
// included.
func TestTheFeedCacheIsWithinTheShardCountCache(t *testing.T) {
	if _, err := FromEnv(env(map[string]string{"FEED_CACHE": "10s", "SHARD_COUNT_CACHE": "10s"})); err != nil {
		t.Errorf("FEED_CACHE equal to SHARD_COUNT_CACHE: %v", err)
	}
	if _, err := FromEnv(env(map[string]string{"FEED_CACHE": "11s", "SHARD_COUNT_CACHE": "10s"})); err == nil || !strings.Contains(err.Error(), "FEED_CACHE") {
		t.Errorf("FEED_CACHE longer than SHARD_COUNT_CACHE: err = %v", err)
	}
}

// TestDeployedRefusesEmulators: on Cloud Functions (K_SERVICE set) an
// emulator host would accept unsigned ID tokens. (A function that signs
// page tokens also needs PAGE_TOKEN_SECRET: service checks it, as only it
// knows which function runs.)
func TestDeployedRefusesEmulators(t *testing.T) {
	_, err := FromEnv(env(map[string]string{
		"K_SERVICE":                   "getCounter",
		"FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099",
		"FIRESTORE_EMULATOR_HOST":     "127.0.0.1:8080",
		"GOOGLE_CLOUD_PROJECT":        "p",
	}))
	for _, name := range []string{"FIREBASE_AUTH_EMULATOR_HOST:", "FIRESTORE_EMULATOR_HOST:"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("deployed with emulators: err does not name %s: %v", name, err)
		}
	}
	c, err := FromEnv(env(map[string]string{"K_SERVICE": "getCounter"}))
	if err != nil || !c.Deployed {
		t.Errorf("a correct deployed configuration: %+v, %v", c, err)
	}
	// The same emulator settings are fine locally.
	if _, err := FromEnv(env(map[string]string{"FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099"})); err != nil {
		t.Errorf("locally: %v", err)
	}
}

var update = flag.Bool("update", false, "rewrite docs/reference/settings.md's table from Settings")

// TestSettingsTableIsGenerated keeps the table of docs/reference/settings.md
// equal to the one rendered from Settings; -update rewrites it.
func TestSettingsTableIsGenerated(t *testing.T) {
	const path = "../../docs/reference/settings.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "| name | default | meaning |")
	end := start + strings.Index(doc[max(start, 0):], "\n\n") + 1
	if start < 0 || end <= start {
		t.Fatalf("%s has no settings table", path)
	}
	if doc[start:end] == MarkdownTable() {
		return
	}
	if !*update {
		t.Fatalf("%s's table differs from config.Settings: go test ./internal/config -run Settings -update", path)
	}
	if err := os.WriteFile(path, []byte(doc[:start]+MarkdownTable()+doc[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEverySettingParsesItsDefault(t *testing.T) {
	for _, s := range Settings {
		var c Config
		if err := s.parse(&c, s.Default); err != nil {
			t.Errorf("%s: default %q: %v", s.Name, s.Default, err)
		}
	}
}

func TestTimeZone(t *testing.T) {
	if c, err := FromEnv(env(nil)); err != nil || c.Calendar.Zone != time.UTC {
		t.Errorf("the default zone: %v, %v; want UTC", c.Calendar.Zone, err)
	}
	if c, err := FromEnv(env(map[string]string{"TIME_ZONE": "Europe/Paris"})); err != nil || c.Calendar.Zone.String() != "Europe/Paris" {
		t.Errorf("Europe/Paris: %v, %v", c.Calendar.Zone, err)
	}
	for _, bad := range []string{"Mars/Olympus", "Local", "+02:00"} {
		if _, err := FromEnv(env(map[string]string{"TIME_ZONE": bad})); err == nil || !strings.Contains(err.Error(), "TIME_ZONE") {
			t.Errorf("TIME_ZONE=%s: %v, want an error naming it", bad, err)
		}
	}
}

// Package config reads every setting of the functions from the environment
// once, validates all of them together, and reports every problem at once.
//
// The README's settings table is the user-facing copy of Settings; a test
// keeps the two in step.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// AuthMode says whether HTTP functions require a Firebase ID token.
type AuthMode string

const (
	AuthRequired AuthMode = "required"
	AuthOff      AuthMode = "off"
)

// Config is the validated configuration of the functions.
type Config struct {
	// ProjectID is the Google Cloud project; empty means "detect it from the
	// runtime credentials" (Cloud Functions), which the emulators cannot do.
	ProjectID string
	// EmulatorHost is FIRESTORE_EMULATOR_HOST; when set, every Firestore
	// call goes to the emulator.
	EmulatorHost string
	// AuthEmulatorHost is FIREBASE_AUTH_EMULATOR_HOST; when set, ID tokens
	// are checked in the Admin SDK's emulator mode (no signature).
	AuthEmulatorHost string

	Auth        AuthMode
	CORSOrigins []string // "*" means any origin (only with AuthOff)

	RollupCadence time.Duration

	InstrumentShards int

	// IncrementRate is the sustained number of increments per second one
	// user may send; IncrementBurst is the bucket size. Rate 0 disables the
	// limit.
	IncrementRate  float64
	IncrementBurst int

	// PageTokenSecret signs queryInstruments page tokens.
	PageTokenSecret string

	LogLevel slog.Level
}

// Setting documents one environment variable.
type Setting struct {
	Name    string
	Default string
	Doc     string
}

// Settings lists every environment variable the functions read.
var Settings = []Setting{
	{"GOOGLE_CLOUD_PROJECT", "detected on Google Cloud", "Project id. Required with the emulators (use a `demo-` id)."},
	{"FIRESTORE_EMULATOR_HOST", "unset", "`host:port` of the Firestore emulator; unset in production."},
	{"FIREBASE_AUTH_EMULATOR_HOST", "unset", "`host:port` of the Auth emulator; ID tokens are then accepted unsigned."},
	{"AUTH", "required", "`required`: HTTP functions need `Authorization: Bearer <Firebase ID token>`. `off`: no check (local demos only; logged as a warning)."},
	{"CORS_ORIGINS", "none (`*` when AUTH=off)", "Comma-separated origins allowed to call the functions from a browser. `*` only with AUTH=off."},
	{"ROLLUP_CADENCE", "1s", "Minimum time between two roll-up writes of one counter (Go duration, 50ms–1h)."},
	{"INSTRUMENT_SHARDS", "3", "Number of shard values of the instruments collection (1–1000). Only ever increase it."},
	{"INCREMENT_RATE_PER_USER", "10", "Increments per second one user may sustain (token bucket); 0 disables the limit."},
	{"INCREMENT_BURST_PER_USER", "20", "Token bucket size of the per-user increment limit."},
	{"PAGE_TOKEN_SECRET", "derived from the project id", "Key that signs page tokens. Set a random value in production so tokens cannot be forged."},
	{"LOG_LEVEL", "info", "`debug`, `info`, `warn` or `error`."},
}

// FromEnv reads and validates the configuration; getenv is usually
// os.Getenv. The error lists every invalid setting.
func FromEnv(getenv func(string) string) (Config, error) {
	var problems []error
	bad := func(name, format string, args ...any) {
		problems = append(problems, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}

	c := Config{
		ProjectID:        first(getenv("GOOGLE_CLOUD_PROJECT"), getenv("GCLOUD_PROJECT")),
		EmulatorHost:     getenv("FIRESTORE_EMULATOR_HOST"),
		AuthEmulatorHost: getenv("FIREBASE_AUTH_EMULATOR_HOST"),
		PageTokenSecret:  getenv("PAGE_TOKEN_SECRET"),
	}
	if c.EmulatorHost != "" && c.ProjectID == "" {
		bad("GOOGLE_CLOUD_PROJECT", "must be set when FIRESTORE_EMULATOR_HOST is (use a demo- project id)")
	}

	switch v := AuthMode(strings.ToLower(first(getenv("AUTH"), string(AuthRequired)))); v {
	case AuthRequired, AuthOff:
		c.Auth = v
	default:
		bad("AUTH", "must be \"required\" or \"off\", got %q", v)
	}

	for _, o := range strings.Split(getenv("CORS_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			bad("CORS_ORIGINS", "origin %q must start with http:// or https://", o)
			continue
		}
		c.CORSOrigins = append(c.CORSOrigins, strings.TrimSuffix(o, "/"))
	}
	if c.Auth == AuthOff && len(c.CORSOrigins) == 0 {
		c.CORSOrigins = []string{"*"}
	}
	if c.Auth == AuthRequired {
		for _, o := range c.CORSOrigins {
			if o == "*" {
				bad("CORS_ORIGINS", "\"*\" is only allowed with AUTH=off; list the origins of your web app")
			}
		}
	}

	var err error
	if c.RollupCadence, err = time.ParseDuration(first(getenv("ROLLUP_CADENCE"), "1s")); err != nil {
		bad("ROLLUP_CADENCE", "%v", err)
	} else if c.RollupCadence < 50*time.Millisecond || c.RollupCadence > time.Hour {
		bad("ROLLUP_CADENCE", "must be between 50ms and 1h, got %s", c.RollupCadence)
	}

	if c.InstrumentShards, err = strconv.Atoi(first(getenv("INSTRUMENT_SHARDS"), "3")); err != nil {
		bad("INSTRUMENT_SHARDS", "must be an integer")
	} else if c.InstrumentShards < 1 || c.InstrumentShards > 1000 {
		bad("INSTRUMENT_SHARDS", "must be between 1 and 1000, got %d", c.InstrumentShards)
	}

	if c.IncrementRate, err = strconv.ParseFloat(first(getenv("INCREMENT_RATE_PER_USER"), "10"), 64); err != nil || c.IncrementRate < 0 {
		bad("INCREMENT_RATE_PER_USER", "must be a number >= 0")
	}
	if c.IncrementBurst, err = strconv.Atoi(first(getenv("INCREMENT_BURST_PER_USER"), "20")); err != nil || c.IncrementBurst < 1 {
		bad("INCREMENT_BURST_PER_USER", "must be an integer >= 1")
	}

	if err := c.LogLevel.UnmarshalText([]byte(first(getenv("LOG_LEVEL"), "info"))); err != nil {
		bad("LOG_LEVEL", "must be debug, info, warn or error")
	}

	if len(problems) > 0 {
		return Config{}, fmt.Errorf("config: %w", errors.Join(problems...))
	}
	return c, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

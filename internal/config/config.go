// Package config reads every setting of the functions from the environment
// once, validates all of them together, and reports every problem at once.
//
// Settings is the one declaration of each setting: its name, default,
// documentation, how deployments pass it, and how it is parsed into Config.
// FromEnv, docs/reference/settings.md's table (checked by a test) and the deploy
// plan (cmd/deployplan) all read it.
//
// It is a table rather than struct tags for a library such as
// sethvargo/go-envconfig, because those stop at the first bad variable,
// while a misconfigured deployment should hear about every problem in one
// log line.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // TIME_ZONE names a zone wherever the functions run

	"github.com/shardcount/shardcount/internal/clientaddr"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/windows"
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
	// Database is FIRESTORE_DATABASE: the Firestore database of every
	// document the functions keep.
	Database string
	// Deployed is true on Cloud Functions / Cloud Run (K_SERVICE is set).
	Deployed bool
	// EmulatorHost is FIRESTORE_EMULATOR_HOST; when set, every Firestore
	// call goes to the emulator.
	EmulatorHost string
	// AuthEmulatorHost is FIREBASE_AUTH_EMULATOR_HOST; when set, ID tokens
	// are checked in the Admin SDK's emulator mode (no signature).
	AuthEmulatorHost string

	Auth        AuthMode
	CORSOrigins []string // "*" means any origin (only with AuthOff)

	// FirestoreDeadline bounds the Firestore work of one HTTP request.
	FirestoreDeadline time.Duration

	RollupCadence   time.Duration
	ReconcileBudget time.Duration

	GroupCommit         bool
	GroupCommitMaxBatch int
	GroupCommitMaxWait  time.Duration

	// ShardCountCache is how long an instance may use a counter's shard
	// count without reading it again; it bounds how long a shrink merges.
	ShardCountCache time.Duration
	// FeedCache is how stale a count getCounters answers may be: an
	// instance reads a counter's document at most once per FeedCache for
	// every reader.
	FeedCache time.Duration
	// ErasureCheck is how often an instance looks for erasures begun
	// since its last look: within it, a user's tokens issued before their
	// erasure are refused everywhere.
	ErasureCheck time.Duration

	AutoSharding           bool
	AutoShardingTarget     float64 // sustained shard writes per second per shard
	AutoShardingInterval   time.Duration
	AutoShardingSlowCommit time.Duration

	InstrumentShards int
	ActivityShards   int

	// Roles (AUTH=required): what a signed-in user who is neither the
	// counter's owner nor an admin may do.
	UserMaxDelta    int64 // largest |delta| of an end user's increment
	UserMaxShards   int   // most shards an end user may give a counter
	UserCreate      bool  // signed-in users may create counters
	AnonymousCreate bool  // …users of anonymous sign-in too (with UserCreate)

	// Kinds are the app's kinds of counters (COUNTER_KINDS): an id
	// "KIND:KEY" of one is created by its first use.
	Kinds counter.Kinds

	// AppCheck is how public functions treat App Check tokens of end
	// users; AppCheckConsume names the functions whose calls must carry a
	// limited-use token, consumed on use.
	AppCheck        AppCheckMode
	AppCheckConsume []string
	// AppCheckAccounts bounds the accounts one App Check token serves.
	AppCheckAccounts int
	// AppCheckJWKS and AppCheckAPI replace Google's App Check keys and API
	// locally.
	AppCheckJWKS, AppCheckAPI string
	// Proxies says which X-Forwarded-For hop is the client (TRUSTED_PROXIES).
	Proxies clientaddr.Proxies

	// Windows keeps the roll-up's changes per minute, hour and day for
	// this long after each bucket ends; nil with WINDOWS=off.
	Windows windows.Retention

	// Limits are each end user's budgets, AddressLimits each client
	// address's (an IPv6 /64), SubnetLimits each IPv6 /56's and /48's.
	Limits, AddressLimits, SubnetLimits ratelimit.Limits

	// PageTokenSecret signs queryInstruments page tokens; a deployed
	// function that signs them refuses to start without it (service.New).
	PageTokenSecret string

	// Calendar says where buckets begin: days at midnight in TIME_ZONE.
	Calendar windows.Calendar

	windowsOn bool              // WINDOWS
	retention windows.Retention // WINDOW_RETENTION

	LogLevel slog.Level
}

// Scope says how a deployment passes a setting to the functions.
type Scope int

const (
	// Deployed settings are passed with --set-env-vars when they are set
	// in the environment of scripts/deploy.sh.
	Deployed Scope = iota
	// Secret settings are passed with --set-secrets: the environment of
	// scripts/deploy.sh names a Secret Manager secret, and the function
	// reads its value from the same variable.
	Secret
	// Local settings are for the emulators; a deployed function refuses
	// them.
	Local
	// Platform settings are set by Google Cloud (or by the deploy plan
	// itself); they are documented so their effect is known.
	Platform
)

// Setting declares one environment variable.
type Setting struct {
	Name    string
	Default string // as documented; parse receives it when the variable is unset
	Doc     string
	Scope   Scope
	parse   func(c *Config, v string) error
}

// databaseID is what Firestore accepts as a named database's id.
var databaseID = regexp.MustCompile(`^[a-z][a-z0-9-]{2,61}[a-z0-9]$`)

// AppCheckMode is how public functions treat App Check tokens (APP_CHECK).
type AppCheckMode string

const (
	AppCheckOff AppCheckMode = "off"
	// AppCheckMonitor checks and counts the tokens, refusing nothing.
	AppCheckMonitor AppCheckMode = "monitor"
	// AppCheckEnforce refuses an end user's call without a valid token.
	AppCheckEnforce AppCheckMode = "enforce"
)

// Settings lists every environment variable the functions read.
var Settings = append([]Setting{
	{"GOOGLE_CLOUD_PROJECT", "", "Project id; detected on Google Cloud (`GCLOUD_PROJECT` is read when it is unset). Required with the emulators (use a `demo-` id).", Platform,
		func(c *Config, v string) error { c.ProjectID = v; return nil }},
	{"GCLOUD_PROJECT", "", "Older name of `GOOGLE_CLOUD_PROJECT`, read only when that is unset.", Platform,
		func(c *Config, v string) error {
			if c.ProjectID == "" {
				c.ProjectID = v
			}
			return nil
		}},
	{"FIRESTORE_DATABASE", "(default)", "The Firestore database that holds the counters, their keys, windows and slots, and the activity index: `(default)` or a named database's id. The roll-up trigger, rules and indexes are deployed to it (docs/operations/deploy.md).", Deployed,
		func(c *Config, v string) error {
			if v != "(default)" && !databaseID.MatchString(v) {
				return fmt.Errorf("must be (default) or a database id (4–63 lowercase letters, digits and hyphens, starting with a letter), got %q", v)
			}
			c.Database = v
			return nil
		}},
	{"K_SERVICE", "", "Set by Cloud Functions / Cloud Run: the function is deployed. It then refuses the emulator settings, and a function that signs page tokens (`queryInstruments`) requires `PAGE_TOKEN_SECRET`.", Platform,
		func(c *Config, v string) error { c.Deployed = v != ""; return nil }},
	{"FIRESTORE_EMULATOR_HOST", "", "`host:port` of the Firestore emulator. Local only.", Local,
		func(c *Config, v string) error { c.EmulatorHost = v; return nil }},
	{"FIREBASE_AUTH_EMULATOR_HOST", "", "`host:port` of the Auth emulator; ID tokens are then accepted unsigned. Local only.", Local,
		func(c *Config, v string) error { c.AuthEmulatorHost = v; return nil }},
	{"AUTH", "required", "`required`: public functions need `Authorization: Bearer <Firebase ID token>`. `off`: every caller is an admin, and a token that is sent is still checked (local demos; deploying it needs `--insecure-open`).", Deployed,
		func(c *Config, v string) error {
			switch m := AuthMode(strings.ToLower(v)); m {
			case AuthRequired, AuthOff:
				c.Auth = m
				return nil
			}
			return fmt.Errorf("must be \"required\" or \"off\", got %q", v)
		}},
	{"CORS_ORIGINS", "", "Comma-separated origins allowed to call the functions from a browser; none by default (`*` when `AUTH=off`, and only then).", Deployed,
		func(c *Config, v string) error {
			for o := range strings.SplitSeq(v, ",") {
				if o = strings.TrimSpace(o); o == "" {
					continue
				}
				if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
					return fmt.Errorf("origin %q must start with http:// or https://", o)
				}
				c.CORSOrigins = append(c.CORSOrigins, strings.TrimSuffix(o, "/"))
			}
			return nil
		}},
	{"FIRESTORE_DEADLINE", "10s", "Deadline of the Firestore work of one HTTP request; past it the answer is 503 `UNAVAILABLE` with `Retry-After`. HTTP functions are deployed with a timeout 5 s longer.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.FirestoreDeadline }, 100*time.Millisecond, 5*time.Minute)},
	{"ROLLUP_CADENCE", "1s", "Minimum time between two roll-up writes of one counter (Go duration, 50ms–1m). `rollupCounter` is deployed with a timeout of 3 cadences + 2 × `FIRESTORE_DEADLINE` + 30 s, which must stay within the 540 s an event function may run.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.RollupCadence }, 50*time.Millisecond, time.Minute)},
	{"RECONCILE_BUDGET", "4m", "How long one `reconcileCounters` run works before it saves its cursor and stops; the next run resumes there (1s–8m). The function's timeout and the Cloud Scheduler job's attempt deadline are this + 2 × `FIRESTORE_DEADLINE` + 30 s.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.ReconcileBudget }, time.Second, 8*time.Minute)},
	{"GROUP_COMMIT", "on", "`on`: concurrent increments of one counter in one instance share a Firestore commit. `off`: one commit per increment.", Deployed,
		onOff(func(c *Config) *bool { return &c.GroupCommit })},
	{"GROUP_COMMIT_MAX_BATCH", "250", "Most increments in one shared commit (1–499). A full batch of keyed likes commits about 1,000 writes (a member and a key's record each, the shard, the marker), under 0.5 MiB with the longest ids and uids: Firestore limits a commit's size (10 MiB; the emulator, 4 MiB), not its number of writes.", Deployed,
		intIn(func(c *Config) *int { return &c.GroupCommitMaxBatch }, 1, 499)},
	{"GROUP_COMMIT_MAX_WAIT", "0s", "A batch commits when full or when its oldest increment has waited this long; it then also paces a hot counter to about one commit per wait in each instance. 0: leader/follower only (an idle counter commits at once; increments that queue behind a commit in flight share the next one). See docs/design/group-commit.md.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.GroupCommitMaxWait }, 0, time.Second)},
	{"SHARD_COUNT_CACHE", "5m", "How long an instance uses a counter's shard count before reading it again. A shrink keeps merging shards for this long (plus `FIRESTORE_DEADLINE`).", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.ShardCountCache }, time.Second, time.Hour)},
	{"FEED_CACHE", "1s", "How stale a count `getCounters` answers may be, at most (its `as_of` says how old each is): an instance reads a counter's document at most once per this long, however many readers' pages show it. About the roll-up's cadence: a count read more often would not be newer. At most `SHARD_COUNT_CACHE`; 0s reads every page's counters.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.FeedCache }, 0, time.Hour)},
	{"ERASURE_CHECK", "30s", "How soon every instance refuses the ID tokens a user was issued before their erasure (`eraseMember`) began: each looks for new erasures this often while it serves requests (a read each time, and one per erasure recorded since; after a pause longer than this plus `FIRESTORE_DEADLINE`, one request reads every erasure of the last 65 minutes, and each that comes while it does reads its own user's record, one read). Every instance refuses them within this plus `FIRESTORE_DEADLINE` of the answer to the erasure's first call; an erasure completes no sooner than this plus 4 × `FIRESTORE_DEADLINE` + 1 s after it began.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.ErasureCheck }, time.Second, 10*time.Minute)},
	{"AUTO_SHARDING", "off", "`on`: the roll-up grows a counter whose shards run hot (see docs/design/resharding.md).", Deployed,
		onOff(func(c *Config) *bool { return &c.AutoSharding })},
	{"AUTO_SHARDING_TARGET", "1", "Sustained commits per second per shard above which automatic sharding grows a counter (production Firestore sustains about 1 per document).", Deployed,
		func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return fmt.Errorf("must be a number > 0, got %q", v)
			}
			c.AutoShardingTarget = f
			return nil
		}},
	{"AUTO_SHARDING_INTERVAL", "10m", "Least time between two automatic growths of one counter.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.AutoShardingInterval }, time.Second, 24*time.Hour)},
	{"AUTO_SHARDING_SLOW_COMMIT", "500ms", "An increment commit slower than this counts as contention for automatic sharding.", Deployed,
		durationIn(func(c *Config) *time.Duration { return &c.AutoShardingSlowCommit }, time.Millisecond, time.Minute)},
	{"ACTIVITY_SHARDS", "10", "Shard values of the activity index reconcile finds its work in (1–1000): it takes about 500 marker writes a second per value, one per active counter per 10 × `ROLLUP_CADENCE` per instance at most. Changing it (or ROLLUP_CADENCE, FIRESTORE_DEADLINE) makes the scheduled runs visit every marker once, and they keep reading as many values as its highest setting; above 30 each group of 30 values costs reads of its own. See docs/design/rollup.md.", Deployed,
		intIn(func(c *Config) *int { return &c.ActivityShards }, 1, 1000)},
	{"INSTRUMENT_SHARDS", "3", "Number of shard values of the instruments collection (1–1000). Only ever increase it.", Deployed,
		intIn(func(c *Config) *int { return &c.InstrumentShards }, 1, 1000)},
	{"USER_MAX_DELTA", "1", "Largest \\|delta\\| an end user may send (AUTH=required); the counter's owner and admins send any delta up to 10⁹. See the README's \"Who may do what\".", Deployed,
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > counter.MaxDelta {
				return fmt.Errorf("must be an integer between 1 and %d, got %q", counter.MaxDelta, v)
			}
			c.UserMaxDelta = n
			return nil
		}},
	{"USER_MAX_SHARDS", "100", "Most shards a counter an end user created may have (1–1000): at creation (the heuristic's choice included), when its owner reshards it, and when automatic sharding grows it. Admins and counters of kinds go up to 1000.", Deployed,
		intIn(func(c *Config) *int { return &c.UserMaxShards }, counter.MinShards, counter.MaxShards)},
	{"COUNTER_KINDS", "", "The app's kinds of counters, a JSON object such as `{\"likes\": {\"unique\": true, \"num_shards\": 8}, \"views\": {\"num_shards\": 4}}`. A counter id `KIND:KEY` of a kind is created by its first increment or like, in the same commit, with the kind's settings; no end user owns it. Options: `unique`, `join_only` (with `unique`: an end user joins and never leaves; admins may remove), `choices` (a choice kind, such as reactions or a poll: up to 20 names; each user holds at most one per counter, switched or removed with `incrementCounter`'s `choice`), `distinct` (unique viewers at any scale: each user counted once, approximately, from a sketch a shard, about 0.81% standard error; no member documents; a user is never removed), `num_shards` (default 10), `ranked` (default true: `topCounters` shows them), `decrement` (`admins`, the default, or `users`: who may decrement a plain counter of the kind), `auto_sharding` (default true), `keys_in` (a collection of the app's, such as `posts`, in `FIRESTORE_DATABASE`, under none of shardcount's own: an end user's first use of `KIND:KEY` needs its document `KEY`, else 404; admins are not checked), `mirror` (with `keys_in`: a field of its documents, such as `likes`, which the roll-up sets to the count, a choice kind's to `{count, counts}`, in its commit, only in a document that exists: the app's own queries of its documents carry the counts; docs/guides/social-app.md gives the rule line that keeps users from writing it). Each kind and option once, in lowercase, none empty. See docs/guides/likes.md.", Deployed,
		func(c *Config, v string) error {
			kinds, err := counter.ParseKinds(v)
			c.Kinds = kinds
			return err
		}},
	{"USER_CREATE", "off", "`off`: only admins create counters (an app's backend, with its admin identity); end users reach counters through kinds (`COUNTER_KINDS`). `on`: signed-in users may create counters too, and own them. See the README's \"Who may do what\".", Deployed,
		onOff(func(c *Config) *bool { return &c.UserCreate })},
	{"ANONYMOUS_CREATE", "off", "`on`, with `USER_CREATE=on`: users of anonymous sign-in may create counters too (as end users).", Deployed,
		onOff(func(c *Config) *bool { return &c.AnonymousCreate })},
	{"APP_CHECK", "off", "`enforce`: an end user's call without a valid App Check token (`X-Firebase-AppCheck`) is 401 `UNAUTHENTICATED`; admins are exempt. `monitor`: tokens are checked, counted and logged, and nothing is refused. `off`: not checked. See docs/security.md for why it is off by default.", Deployed,
		func(c *Config, v string) error {
			switch m := AppCheckMode(strings.ToLower(v)); m {
			case AppCheckOff, AppCheckMonitor, AppCheckEnforce:
				c.AppCheck = m
				return nil
			}
			return fmt.Errorf("must be off, monitor or enforce, got %q", v)
		}},
	{"APP_CHECK_CONSUME", "", "Comma-separated functions (such as `incrementCounter`) whose calls must carry a limited-use App Check token, consumed on use through the App Check API: a replayed token is refused (with `APP_CHECK=enforce`). Each call then costs a request to that API.", Deployed,
		func(c *Config, v string) error {
			for name := range strings.SplitSeq(v, ",") {
				if name = strings.TrimSpace(name); name != "" {
					c.AppCheckConsume = append(c.AppCheckConsume, name)
				}
			}
			return nil
		}},
	{"APP_CHECK_ACCOUNTS", "3", "How many accounts one App Check token may serve over its life (per instance): a device's token switching between a few accounts works; one token carrying many fresh accounts is 403. A token also spends budgets of its own, a user's (`RATE_LIMITS`).", Deployed,
		intIn(func(c *Config) *int { return &c.AppCheckAccounts }, 1, 20)},
	{"APP_CHECK_JWKS_URL", "", "Where App Check's public keys are served instead of Google's (the local stand-in of scripts/dev.sh and the tests). Local only.", Local,
		func(c *Config, v string) error { c.AppCheckJWKS = v; return nil }},
	{"APP_CHECK_API_URL", "", "Base URL of a stand-in for the App Check API, which consumes limited-use tokens. Local only.", Local,
		func(c *Config, v string) error { c.AppCheckAPI = v; return nil }},
	{"TRUSTED_PROXIES", "", "Proxies in front of the functions that append to `X-Forwarded-For` (a load balancer, a Firebase Hosting rewrite): their number, or their addresses as comma-separated CIDRs. The client's address, which budgets count under, is the hop before them. Unset: the hop Google's front end wrote.", Deployed,
		func(c *Config, v string) (err error) { c.Proxies, err = clientaddr.Parse(v); return err }},
	{"WINDOWS", "on", "`on`: the roll-up adds each change to the counter's minute, hour and day buckets (history, `topCounters`). `off`: it writes none.", Deployed,
		onOff(func(c *Config) *bool { return &c.windowsOn })},
	{"WINDOW_RETENTION", "minute=48h,hour=840h,day=26280h", "How long buckets are kept after they end, per granularity (`granularity=duration`, comma-separated; the ones listed replace their defaults: two days of minutes, 35 days of hours, three years of days), by a TTL policy.", Deployed,
		func(c *Config, v string) error {
			r := maps.Clone(windows.DefaultRetention)
			for item := range strings.SplitSeq(v, ",") {
				if item = strings.TrimSpace(item); item == "" {
					continue
				}
				name, d, ok := strings.Cut(item, "=")
				g, err := windows.Parse("WINDOW_RETENTION", name)
				dur, derr := time.ParseDuration(d)
				if !ok || err != nil || derr != nil || dur < time.Hour {
					return fmt.Errorf("%q is not granularity=duration with minute, hour or day and a duration of 1h or more", item)
				}
				r[g] = dur
			}
			c.retention = r
			return nil
		}},
	{"TIME_ZONE", "UTC", "The time zone of days (an IANA name such as `America/New_York`): day buckets, `history=day`, `topCounters ?window=day`, and the day `last_day` ranks from, start at its midnight (minutes and hours are UTC's, the same everywhere but in zones of half hours). Set it before counting: a change starts new days at the new midnight, and days written before keep their start (history shows them as 0, and for a day `last_day` and `window=day&previous=true` find no previous day).", Deployed,
		func(c *Config, v string) (err error) {
			if c.Calendar.Zone, err = time.LoadLocation(v); err != nil || v == "" || v == "Local" {
				return fmt.Errorf("%q is not an IANA time zone such as UTC or Europe/Paris", v)
			}
			return nil
		}},
	{"RATE_LIMITS", ratelimit.UserDefaults.String(), "Budgets of each end user, `budget=rate:burst` (per second), comma-separated; the ones listed replace their defaults; rate 0 lifts one. Admins have none. See docs/security.md.", Deployed,
		func(c *Config, v string) (err error) {
			c.Limits, err = ratelimit.Parse(v, ratelimit.UserDefaults)
			return err
		}},
	{"ADDRESS_RATE_LIMITS", ratelimit.AddressDefaults.String(), "Budgets of each client address (an IPv6 address by its /64), in the syntax of `RATE_LIMITS`: every end user's call spends from both. Many users may share an address (a NAT): raise them to what that many users do at their peak.", Deployed,
		func(c *Config, v string) (err error) {
			c.AddressLimits, err = ratelimit.Parse(v, ratelimit.AddressDefaults)
			return err
		}},
	{"SUBNET_RATE_LIMITS", "", "Budgets of each IPv6 /56 and each /48, in the syntax of `RATE_LIMITS`, over twice `ADDRESS_RATE_LIMITS` by default: every call from an IPv6 address spends from its /64, its /56 and its /48, so hopping across the /64s of one site brings no fresh budget. A 6to4 or Teredo address counts as the IPv4 address inside it.", Deployed,
		func(c *Config, v string) (err error) {
			c.SubnetLimits, err = ratelimit.Parse(v, ratelimit.Scaled(c.AddressLimits, ratelimit.SubnetScale))
			return err
		}},
	{"PAGE_TOKEN_SECRET", "", "Key that signs `queryInstruments` page tokens. Required when that function is deployed, from Secret Manager (`scripts/deploy.sh` takes the secret's name). Locally a fixed development key is used when unset.", Secret,
		func(c *Config, v string) error {
			if v != "" && len(v) < 16 {
				return errors.New("must be at least 16 characters")
			}
			c.PageTokenSecret = v
			return nil
		}},
	{"LOG_LEVEL", "info", "`debug`, `info`, `warn` or `error`.", Deployed,
		func(c *Config, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
				return errors.New("must be debug, info, warn or error")
			}
			return nil
		}},
}, otelSettings...)

// FromEnv reads and validates the configuration; getenv is usually
// os.Getenv. The error lists every invalid setting; the configuration is
// then as far as it parsed (the edge still needs CORS_ORIGINS to answer a
// browser with the 503).
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	var problems []error
	bad := func(name string, err error) { problems = append(problems, fmt.Errorf("%s: %w", name, err)) }
	for _, s := range Settings {
		v := getenv(s.Name)
		if v == "" {
			v = s.Default
		}
		if err := s.parse(&c, v); err != nil {
			bad(s.Name, err)
		}
	}

	if c.windowsOn {
		c.Windows = c.retention
	}
	if c.FeedCache > c.ShardCountCache {
		bad("FEED_CACHE", fmt.Errorf("%s is longer than SHARD_COUNT_CACHE (%s), which bounds how long an instance may answer for a deleted counter", c.FeedCache, c.ShardCountCache))
	}
	if t := c.RollupTimeout(); t > MaxEventTimeout {
		bad("ROLLUP_CADENCE", fmt.Errorf("3 cadences + 2 × FIRESTORE_DEADLINE + 30 s is %s, over the %s an event function may run: shorten one of them", t, MaxEventTimeout))
	}
	if c.EmulatorHost != "" && c.ProjectID == "" {
		bad("GOOGLE_CLOUD_PROJECT", errors.New("must be set when FIRESTORE_EMULATOR_HOST is (use a demo- project id)"))
	}
	if c.Auth == AuthOff && len(c.CORSOrigins) == 0 {
		c.CORSOrigins = []string{"*"}
	}
	if c.Auth == AuthRequired {
		for _, o := range c.CORSOrigins {
			if o == "*" {
				bad("CORS_ORIGINS", errors.New("\"*\" is only allowed with AUTH=off; list the origins of your web app"))
			}
		}
	}
	if c.Deployed {
		// An emulator setting on a deployed function would accept unsigned
		// tokens or send data nowhere: refuse to serve.
		for _, s := range Settings {
			if s.Scope == Local && getenv(s.Name) != "" {
				bad(s.Name, errors.New("must not be set on a deployed function (K_SERVICE is set): it is for the emulators only"))
			}
		}
	}

	if len(problems) > 0 {
		return c, fmt.Errorf("config: %w", errors.Join(problems...))
	}
	return c, nil
}

// MaxEventTimeout is the longest an event-driven Cloud Function (2nd gen)
// may run.
const MaxEventTimeout = 540 * time.Second

// MarkdownTable renders Settings as docs/reference/settings.md's table.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| name | default | meaning |\n|---|---|---|\n")
	for _, s := range Settings {
		def := "unset"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Name, def, s.Doc)
	}
	return b.String()
}

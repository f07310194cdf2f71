// Package core holds the rules of the counters' functions, each written
// once: validate what the caller sent, spend the caller's budget before
// anything is read for it, read, pay for what the read found (a first
// use), authorize, queue the change (group commit), answer. It knows
// neither HTTP (internal/httpapi decodes and answers, internal/service
// wires the two) nor Firestore: it works over the interfaces below, each
// what it needs of a store (internal/store/...), so the whole service's
// simulation runs it on its model of Firestore.
package core

import (
	"context"
	"time"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/erasure"
	"github.com/shardcount/shardcount/internal/groupcommit"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/windows"
)

// Caller is who sends a request, to which function, as the edge
// identified them.
type Caller struct {
	Function  string
	User      string    // the Firebase uid; "" when no token was sent (AUTH=off only)
	Anonymous bool      // a user of Firebase anonymous sign-in
	Admin     bool      // a token with the custom claim admin: true, and every caller with AUTH=off
	IssuedAt  time.Time // of the ID token (zero: none): one of before the user's erasure makes nothing
	Addr      string    // the network address, for budgets
	AppToken  string    // a digest of the caller's valid App Check token, whose budgets it spends too
	OneUse    bool      // a limited-use App Check token, consumed by this call: it pays for one increment
}

// budgetKeys are the keys the caller's budgets are kept under.
func (c Caller) budgetKeys() []ratelimit.Key {
	return ratelimit.Keys(c.User, c.Addr, c.AppToken)
}

// Counters are the counter documents and their life.
type Counters interface {
	// Live reads a counter now; NOT_FOUND if it does not exist or is
	// deleted. Stored sees a deleted counter's tombstone too.
	Live(ctx context.Context, id string) (counter.Counter, error)
	Stored(ctx context.Context, id string) (counter.Counter, error)
	// LiveOrNew is Live, but an absent counter of a kind is the counter
	// its first use creates (a zero Version). LiveOrNewCached reads it
	// through this instance's cache, and says until when it may be used.
	LiveOrNew(ctx context.Context, id string) (counter.Counter, error)
	LiveOrNewCached(ctx context.Context, id string) (counter.Counter, time.Time, error)
	// Strong is a live counter and the sum of its shards, at one read
	// time, which it returns.
	Strong(ctx context.Context, id string) (counter.Counter, int64, time.Time, error)
	Create(ctx context.Context, c counter.Counter) (counter.Counter, error)
	// Delete leaves a tombstone until lateWrites after its commit lands.
	Delete(ctx context.Context, id string, lateWrites time.Duration) (counter.Counter, error)
	// Reshard sets the shard count; shrinking merges for mergeFor.
	Reshard(ctx context.Context, id string, n int, mergeFor time.Duration, reason string) (before, after counter.Counter, merged int, err error)
	SetRanked(ctx context.Context, id string, ranked bool) error
	List(ctx context.Context, owner string, all bool, after string, limit int) ([]counter.Counter, string, error)
	// Fresh reads counters through this instance's cache, as read within
	// the last within, paying for the documents it reads first; each
	// counter has its error (NOT_FOUND), err is the read's.
	Fresh(ctx context.Context, ids []string, within time.Duration, pay func(reads int) error) ([]counter.Counter, []error, error)
}

// Apps are the app's own documents.
type Apps interface {
	// Exists reads whether a document of the app's exists (a kind's
	// keys_in).
	Exists(ctx context.Context, path string) (bool, error)
}

// Members are the member documents of counters that count users.
type Members interface {
	// Members are a page of counter id's members after the uid after.
	Members(ctx context.Context, id, after string, limit int) ([]counter.Member, string, error)
	IsMember(ctx context.Context, id, uid string) (member bool, choice string, err error)
	// Holds returns, of counters ids, those uid is a member of, with
	// their choice: each query a read per member document found, one at
	// least, for 30 counters at most.
	Holds(ctx context.Context, uid string, ids []string) (map[string]string, error)
	// Memberships are uid's member documents, newest first, after the
	// one after (the zero Membership: from the first), at most limit.
	Memberships(ctx context.Context, uid string, after counter.Membership, limit int) ([]counter.Membership, error)
	// DropOrphan deletes uid's member document of counter id when id has
	// no document (deleted by hand), and reports whether it did.
	DropOrphan(ctx context.Context, id, uid string) (bool, error)
	// RecordErasure records that uid's erasure began, until expires, with
	// the key of its page tokens, unless one begun later stands: it returns
	// the record that stands. Erasure reads uid's latest record (a zero
	// Began: none); ErasuresSince returns those recorded after since, by
	// uid.
	RecordErasure(ctx context.Context, uid string, began, expires time.Time, key []byte) (erasure.Record, error)
	Erasure(ctx context.Context, uid string) (erasure.Record, error)
	ErasuresSince(ctx context.Context, since time.Time) (map[string]time.Time, error)
}

// Increments add to counters' shards.
type Increments interface {
	// Apply commits ops to counter id and returns one result per op
	// (internal/increment).
	Apply(ctx context.Context, id string, ops []increment.Op) []increment.Result
	// Reset sets a counter's value as of a read time, which it returns.
	Reset(ctx context.Context, id string, v int64) (time.Time, error)
}

// Windows are the roll-up's buckets read back.
type Windows interface {
	History(ctx context.Context, id string, g windows.Granularity, starts []time.Time) ([]windows.Tally, error)
	// Rising ranks what is rising now, among the candidates of a ranking
	// of the last hour at depth and depth counters of each of the current
	// and the previous hour by rise; it returns whether no other counter
	// can score above the last listed, and how many it scored.
	Rising(ctx context.Context, r windows.Rising, now time.Time, depth, limit int, kind string) ([]windows.Scored, bool, int, error)
	// DistinctHistory estimates a distinct counter's members of each
	// bucket of g at starts, and of all of them together.
	DistinctHistory(ctx context.Context, id string, g windows.Granularity, starts []time.Time) ([]windows.Tally, int64, error)
	// Top ranks the counters of kind (all: "") by their count in the
	// bucket of g at start (estimated: by a distinct kind's estimate),
	// or by total when g is "".
	Top(ctx context.Context, g windows.Granularity, start time.Time, limit int, kind string, estimated bool) ([]windows.Ranked, error)
	// RollingTop ranks a rolling window at depth, and says if exactly.
	RollingTop(ctx context.Context, r windows.Rolling, now time.Time, depth, limit int, kind string) ([]windows.Ranked, bool, error)
}

// Instruments are the sharded-timestamps example's.
type Instruments interface {
	Record(ctx context.Context, batch []instruments.Instrument) ([]string, error)
	Query(ctx context.Context, field, value string, limit int, token string) ([]instruments.Instrument, string, error)
}

// Stores are what the core works on.
type Stores struct {
	Counters    Counters
	Members     Members
	Apps        Apps
	Increments  Increments
	Windows     Windows
	Instruments Instruments
	// What one op's share of a shared commit, one reset and one
	// queryInstruments read at most: what their budgets pay for.
	ReadsPerIncrement, ReadsPerReset, ReadsPerQuery int
}

// Metrics are what the core counts (internal/telemetry's when deployed).
type Metrics interface {
	// CountIncrement counts an increment's result, or err, of a like or not.
	CountIncrement(like bool, r increment.Result, err error)
}

// Options are what the core is given beside its stores.
type Options struct {
	// Now is the core's clock, required: the service's (Deps.Now), or a
	// test's. The core's own code reads no other; the rate limiter and the
	// group commit it builds wait in real time, on the wall clock.
	Now     func() time.Time
	Metrics Metrics // what the core counts (nil: nothing)
}

// Core serves the counters' functions of one instance.
type Core struct {
	cfg        config.Config
	now        func() time.Time
	metrics    Metrics
	counters   Counters
	members    Members
	apps       Apps
	increments Increments
	windows    Windows
	instrs     Instruments
	limiter    *ratelimit.Limiter
	batcher    *groupcommit.Batcher[increment.Op, increment.Result]
	readsPaid  map[ratelimit.Budget]int
	erasures   *erasure.Gate
}

// New returns the core of cfg over stores.
func New(cfg config.Config, stores Stores, opts Options) *Core {
	if opts.Now == nil {
		panic("core.New: Options.Now is required")
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	core := &Core{cfg: cfg, now: opts.Now, metrics: opts.Metrics, counters: stores.Counters, members: stores.Members, apps: stores.Apps, increments: stores.Increments,
		windows: stores.Windows, instrs: stores.Instruments, limiter: ratelimit.New(cfg.Limits, cfg.AddressLimits, cfg.SubnetLimits),
		readsPaid: readsPaid(stores.ReadsPerIncrement, stores.ReadsPerReset, stores.ReadsPerQuery)}
	maxBatch := cfg.GroupCommitMaxBatch
	if !cfg.GroupCommit {
		maxBatch = 1
	}
	core.erasures = core.newGate()
	core.batcher = groupcommit.New(maxBatch, cfg.GroupCommitMaxWait, core.flush)
	return core
}

type noMetrics struct{}

func (noMetrics) CountIncrement(bool, increment.Result, error) {}

// flush is the group commit's: one counter's queued increments in one
// commit, under the function's deadline but no caller's context (callers
// may be gone; the others still need the commit).
func (core *Core) flush(ctx context.Context, id string, ops []increment.Op) []increment.Result {
	ctx, cancel := context.WithTimeout(ledger.WithLabel(ctx, "increment"), core.cfg.FirestoreDeadline)
	defer cancel()
	return core.increments.Apply(ctx, id, ops)
}

// lateWrites is how long after a shrink or a deletion an instance may
// still write to a counter as it was: its cached counter document lives
// SHARD_COUNT_CACHE, and a commit started just before may take
// FIRESTORE_DEADLINE.
func (core *Core) lateWrites() time.Duration {
	return core.cfg.ShardCountCache + core.cfg.FirestoreDeadline + time.Second
}

package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/fsmodel/fsmodeltest"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/store/appstore"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/store/incrementstore"
	"github.com/shardcount/shardcount/internal/store/instrumentstore"
	"github.com/shardcount/shardcount/internal/store/memberstore"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/wire"
)

// The core's rules, table-tested over an in-memory Firestore: the real
// stores on internal/fsmodel, the model the whole service's simulation
// runs on, held to the emulator by its differential test (as raft's
// MemoryStorage stands beside its Storage). The clock is the test's.

// testKinds are the kinds of every way of counting.
const testKinds = `{"views": {"num_shards": 2}, "likes": {"unique": true, "num_shards": 2}, "viewers": {"unique": true, "join_only": true},` +
	` "reactions": {"choices": ["like", "love"]}, "watchers": {"distinct": true, "num_shards": 2}}`

// memCore is a core over an in-memory Firestore, with settings env beside
// the kinds above; its clock stands at now until the test moves it.
type memCore struct {
	*Core
	db  *fs.DB
	cfg config.Config
	mu  sync.Mutex
	now time.Time
}

func newMemCore(t *testing.T, env map[string]string) *memCore {
	t.Helper()
	vars := map[string]string{"COUNTER_KINDS": testKinds, "GROUP_COMMIT_MAX_WAIT": "0s"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	m := &memCore{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	clock := func() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.now }
	db := fsmodeltest.DB(t, "demo-core", fsmodel.New(clock))
	m.db, m.cfg = db, cfg
	m.Core = m.another()
	return m
}

// another is another instance's core over the same Firestore: its caches
// of its own, the same clock.
func (m *memCore) another() *Core {
	clock := func() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.now }
	cfg := m.cfg
	base := shared.New(m.db, shared.Options{Now: clock})
	counters := counterstore.New(base, counterstore.Options{ShardCountCache: cfg.ShardCountCache, Kinds: cfg.Kinds, Calendar: cfg.Calendar})
	return New(cfg, Stores{
		Counters: counters, Members: memberstore.New(base), Apps: appstore.New(base),
		Increments:  incrementstore.New(base, counters, incrementstore.Options{ShardCountCache: cfg.ShardCountCache, Windows: cfg.Windows, Calendar: cfg.Calendar}),
		Windows:     windowstore.New(m.db, cfg.Calendar),
		Instruments: instrumentstore.New(m.db, 1, []byte("test")), ReadsPerIncrement: incrementstore.MaxReadsPerOp, ReadsPerReset: incrementstore.ResetReads,
	}, Options{Now: clock})
}

// advance moves the clock on by d.
func (m *memCore) advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

// Callers of each role.
var (
	admin     = Caller{Function: "f", User: "boss", Admin: true, Addr: "10.0.0.1"}
	user      = Caller{Function: "f", User: "ana", Addr: "10.0.0.2"}
	anonymous = Caller{Function: "f", User: "anon", Anonymous: true, Addr: "10.0.0.3"}
)

func ptr[T any](v T) *T { return &v }

// codeOf is err's code, "" for none.
func codeOf(err error) string {
	if err == nil {
		return ""
	}
	return string(errs.CodeOf(err))
}

// TestEachModeTakesItsOwnIncrements: what an increment may be, by the
// counter's mode and the caller's role (README, "Who may do what").
func TestEachModeTakesItsOwnIncrements(t *testing.T) {
	m := newMemCore(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		caller Caller
		item   wire.IncrementItem
		code   string
	}{
		{"a view", user, wire.IncrementItem{CounterID: ptr("views:p1")}, ""},
		{"a view taken back by a user", user, wire.IncrementItem{CounterID: ptr("views:p1"), Delta: ptr[int64](-1)}, "PERMISSION_DENIED"},
		{"a view taken back by an admin", admin, wire.IncrementItem{CounterID: ptr("views:p1"), Delta: ptr[int64](-1)}, ""},
		{"views beyond ±1 from a user", user, wire.IncrementItem{CounterID: ptr("views:p1"), Delta: ptr[int64](5)}, "PERMISSION_DENIED"},
		{"a member on a plain counter", admin, wire.IncrementItem{CounterID: ptr("views:p1"), Member: ptr("ana")}, "INVALID_ARGUMENT"},
		{"a choice on a plain counter", user, wire.IncrementItem{CounterID: ptr("views:p1"), Choice: ptr("love")}, "INVALID_ARGUMENT"},
		{"a like", user, wire.IncrementItem{CounterID: ptr("likes:p1")}, ""},
		{"an unlike", anonymous, wire.IncrementItem{CounterID: ptr("likes:p1"), Delta: ptr[int64](-1)}, ""},
		{"a like of 2", admin, wire.IncrementItem{CounterID: ptr("likes:p1"), Delta: ptr[int64](2)}, "INVALID_ARGUMENT"},
		{"a like for a member, by a user", user, wire.IncrementItem{CounterID: ptr("likes:p1"), Member: ptr("ben")}, "PERMISSION_DENIED"},
		{"a like for a member, by an admin", admin, wire.IncrementItem{CounterID: ptr("likes:p1"), Member: ptr("ben")}, ""},
		{"a like for no uid", admin, wire.IncrementItem{CounterID: ptr("likes:p1"), Member: ptr("a/b")}, "INVALID_ARGUMENT"},
		{"a join", user, wire.IncrementItem{CounterID: ptr("viewers:p1")}, ""},
		{"a user leaves a join-only counter", user, wire.IncrementItem{CounterID: ptr("viewers:p1"), Delta: ptr[int64](-1)}, "PERMISSION_DENIED"},
		{"an admin removes a member of it", admin, wire.IncrementItem{CounterID: ptr("viewers:p1"), Delta: ptr[int64](-1), Member: ptr("ana")}, ""},
		{"a reaction", user, wire.IncrementItem{CounterID: ptr("reactions:p1"), Choice: ptr("love")}, ""},
		{"no reaction", user, wire.IncrementItem{CounterID: ptr("reactions:p1"), Choice: ptr("")}, ""},
		{"a reaction not declared", user, wire.IncrementItem{CounterID: ptr("reactions:p1"), Choice: ptr("meh")}, "INVALID_ARGUMENT"},
		{"a +1 with no choice", user, wire.IncrementItem{CounterID: ptr("reactions:p1")}, "INVALID_ARGUMENT"},
		{"a choice beside a delta", user, wire.IncrementItem{CounterID: ptr("reactions:p1"), Choice: ptr("love"), Delta: ptr[int64](1)}, "INVALID_ARGUMENT"},
		{"a -1 removes the reaction", user, wire.IncrementItem{CounterID: ptr("reactions:p1"), Delta: ptr[int64](-1)}, ""},
		{"a distinct view", user, wire.IncrementItem{CounterID: ptr("watchers:p1")}, ""},
		{"a distinct view taken back", admin, wire.IncrementItem{CounterID: ptr("watchers:p1"), Delta: ptr[int64](-1)}, "INVALID_ARGUMENT"},
		{"a distinct view for a member", admin, wire.IncrementItem{CounterID: ptr("watchers:p1"), Member: ptr("cy")}, ""},
		{"a choice on a distinct counter", user, wire.IncrementItem{CounterID: ptr("watchers:p1"), Choice: ptr("love")}, "INVALID_ARGUMENT"},
		{"a counter of no kind", user, wire.IncrementItem{CounterID: ptr("nothing")}, "NOT_FOUND"},
	} {
		resp, _, err := m.IncrementCounter(ctx, tc.caller, wire.IncrementCounterRequest{IncrementItem: tc.item}, nil)
		if codeOf(err) != tc.code {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.code)
			continue
		}
		if err == nil && resp.CounterID != *tc.item.CounterID {
			t.Errorf("%s: answered %+v", tc.name, resp)
		}
	}
}

// TestEachModeAnswersItsOwnFields: an increment and a read answer what the
// counter's mode tells, and nothing of another's.
func TestEachModeAnswersItsOwnFields(t *testing.T) {
	m := newMemCore(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		id   string
		item wire.IncrementItem
		// what the increment answers, and what a read tells its reader
		member, choice, estimate, counts bool
	}{
		{id: "views:p2"},
		{id: "likes:p2", member: true},
		{id: "viewers:p2", member: true},
		{id: "reactions:p2", item: wire.IncrementItem{Choice: ptr("like")}, member: true, choice: true, counts: true},
		{id: "watchers:p2", estimate: true},
	} {
		tc.item.CounterID = &tc.id
		inc, _, err := m.IncrementCounter(ctx, user, wire.IncrementCounterRequest{IncrementItem: tc.item}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		if (inc.Member != nil) != tc.member || (inc.Choice != nil) != tc.choice || inc.Shard == nil {
			t.Errorf("%s: the increment answered %+v", tc.id, inc)
		}
		for _, consistency := range []string{"eventual", "strong"} {
			got, err := m.GetCounter(ctx, user, wire.GetCounterRequest{CounterID: &tc.id, Consistency: &consistency})
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.id, consistency, err)
			}
			if (got.Member != nil) != tc.member || (got.Choice != nil) != tc.choice || got.Estimate != tc.estimate || (got.Counts != nil) != tc.counts || got.Unique != tc.member {
				t.Errorf("%s, %s: read %+v", tc.id, consistency, got)
			}
			if tc.member && !*got.Member {
				t.Errorf("%s, %s: the reader who counted is no member", tc.id, consistency)
			}
			if consistency == "strong" && got.Count != 1 {
				t.Errorf("%s: a strong read counts %d, want 1", tc.id, got.Count)
			}
		}
	}
}

// TestModesRefuseWhatTheyCannotDo: a reset or a reshard of what counts
// users, history by minute or a window of days where no sketch keeps
// them, members of what keeps none: each a 400, nothing written.
func TestModesRefuseWhatTheyCannotDo(t *testing.T) {
	m := newMemCore(t, nil)
	ctx := context.Background()
	for _, id := range []string{"views:p3", "likes:p3", "watchers:p3"} {
		if _, _, err := m.IncrementCounter(ctx, admin, wire.IncrementCounterRequest{IncrementItem: wire.IncrementItem{CounterID: ptr(id), Member: map[bool]*string{true: ptr("ana")}[id != "views:p3"]}}, nil); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	for _, tc := range []struct {
		name string
		do   func() error
		code string
	}{
		{"a reset of a plain counter", func() error {
			_, err := m.ResetCounter(ctx, admin, wire.ResetCounterRequest{CounterID: ptr("views:p3")})
			return err
		}, ""},
		{"a reset of a unique one", func() error {
			_, err := m.ResetCounter(ctx, admin, wire.ResetCounterRequest{CounterID: ptr("likes:p3")})
			return err
		}, "INVALID_ARGUMENT"},
		{"a reset of a distinct one", func() error {
			_, err := m.ResetCounter(ctx, admin, wire.ResetCounterRequest{CounterID: ptr("watchers:p3")})
			return err
		}, "INVALID_ARGUMENT"},
		{"a reshard of a distinct one", func() error {
			_, err := m.ReshardCounter(ctx, admin, wire.ReshardCounterRequest{CounterID: ptr("watchers:p3"), NumShards: ptr[int64](4)})
			return err
		}, "INVALID_ARGUMENT"},
		{"members of a plain counter", func() error {
			_, err := m.ListMembers(ctx, admin, wire.ListMembersRequest{CounterID: ptr("views:p3")})
			return err
		}, "INVALID_ARGUMENT"},
		{"members of a unique one", func() error {
			_, err := m.ListMembers(ctx, admin, wire.ListMembersRequest{CounterID: ptr("likes:p3")})
			return err
		}, ""},
		{"a distinct counter's minutes", func() error {
			_, err := m.GetCounter(ctx, user, wire.GetCounterRequest{CounterID: ptr("watchers:p3"), History: ptr("minute")})
			return err
		}, "INVALID_ARGUMENT"},
		{"a distinct counter's last 7 days", func() error {
			_, err := m.GetCounter(ctx, user, wire.GetCounterRequest{CounterID: ptr("watchers:p3"), Window: ptr("last_7_days")})
			return err
		}, ""},
		{"a plain counter's last 7 days", func() error {
			_, err := m.GetCounter(ctx, user, wire.GetCounterRequest{CounterID: ptr("views:p3"), Window: ptr("last_7_days")})
			return err
		}, "INVALID_ARGUMENT"},
	} {
		if err := tc.do(); codeOf(err) != tc.code {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.code)
		}
	}
}

// TestNothingIsReadBeforeItIsPaid: an end user whose budget is spent is
// refused before the core reads anything for them, and what it reads for
// a paid request is what the budget paid for.
func TestNothingIsReadBeforeItIsPaid(t *testing.T) {
	m := newMemCore(t, map[string]string{"RATE_LIMITS": "read=1:1,increment=1:1", "ADDRESS_RATE_LIMITS": "read=0:1,increment=0:1"})
	ctx := context.Background()
	reads := func() int64 {
		return m.db.Stats()["read"].Reads + m.db.Stats()["increment"].Reads + m.db.Stats()["other"].Reads
	}
	for _, tc := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"a read", func(ctx context.Context) error {
			_, err := m.GetCounter(ctx, user, wire.GetCounterRequest{CounterID: ptr("likes:p4")})
			return err
		}},
		{"a like", func(ctx context.Context) error {
			_, _, err := m.IncrementCounter(ctx, user, wire.IncrementCounterRequest{IncrementItem: wire.IncrementItem{CounterID: ptr("likes:p4")}}, nil)
			return err
		}},
	} {
		paid, led := ledger.New(ctx, false)
		if err := tc.do(paid); err != nil {
			t.Fatalf("%s, paid: %v", tc.name, err)
		}
		if led.Reads() == 0 || led.Unbudgeted() != 0 {
			t.Errorf("%s read %d, %d of them unbudgeted; want some, all paid", tc.name, led.Reads(), led.Unbudgeted())
		}
		before := reads()
		if err := tc.do(ctx); codeOf(err) != "RESOURCE_EXHAUSTED" {
			t.Errorf("%s past the budget: %v, want RESOURCE_EXHAUSTED", tc.name, err)
		}
		if after := reads(); after != before {
			t.Errorf("%s past the budget read %d documents", tc.name, after-before)
		}
	}
}

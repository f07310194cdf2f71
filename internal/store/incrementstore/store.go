// Package incrementstore commits increments and likes to the shards of
// counters: it runs the rules of internal/increment against Firestore,
// reading what each commit depends on (the members of a unique counter's
// users, a plain counter's value near its bound, the records of keys that
// raced), committing the plan with its preconditions, and telling the
// rules how it went. It also resets counters, the other write that adds
// to a shard.
package incrementstore

import (
	"context"
	"math/bits"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/shared"

	"fmt"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/retry"
	"github.com/shardcount/shardcount/internal/sizedlru"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// Options configure a Store.
type Options struct {
	// ShardCountCache is how long a known value of a counter (see
	// bound.go) is used before the shards are summed again.
	ShardCountCache time.Duration
	// SlowCommit marks a commit as contended (AUTO_SHARDING_SLOW_COMMIT).
	SlowCommit time.Duration
	// ActivityEvery is how often an instance marks a counter it writes in
	// the activity index (internal/activity).
	ActivityEvery time.Duration
	// Windows keeps a distinct counter's hour and day sketches for so
	// long after each ends; nil: none (WINDOWS=off).
	Windows windows.Retention
	// Calendar says where those hours and days begin.
	Calendar windows.Calendar
}

// Counters are the counter documents increments read and create
// (internal/store/counterstore).
type Counters interface {
	// LiveOrNewCached reads a counter through this instance's cache, and
	// says until when it may be used as read.
	LiveOrNewCached(ctx context.Context, id string) (counter.Counter, time.Time, error)
	// Stored reads a counter's document now, a tombstone included.
	Stored(ctx context.Context, id string) (counter.Counter, error)
	// Sum sums a counter's shards at a read time (zero: now).
	Sum(ctx context.Context, id string, at time.Time) (int64, time.Time, error)
	// Update is the read-commit-retry of a counter document.
	Update(ctx context.Context, id string, withTombstone bool, what string, change counterstore.Change) (counter.Counter, *pb.CommitResponse, error)
	// FirstUseWrite creates counter c in a first use's commit, and
	// FirstUsed returns it as that commit created it.
	FirstUseWrite(c counter.Counter) *pb.Write
	FirstUsed(c counter.Counter, resp *pb.CommitResponse, write int, sent time.Time) counter.Counter
}

// Store applies increments and likes to counters, and what one instance
// remembers to do so cheaply.
type Store struct {
	db       *fs.DB
	base     *shared.Base
	counters Counters
	opts     Options

	known     *sizedlru.Cache[string, knownValue] // see bound.go
	contended *sizedlru.Cache[string, bool]       // the last commit of the counter was slow or refused
	marked    *sizedlru.Cache[string, time.Time]  // when this instance last marked a counter active
	viewers   *sizedlru.Cache[string, int]        // see sketch.go: viewers a shard's sketches hold, and that shard
}

// maxRemembered bounds the counters (or viewers) one instance remembers
// anything of, and rememberedShare the memory each of its caches takes (a 64th
// of the instance's); the least recently used are forgotten first.
const (
	maxRemembered   = 100_000
	rememberedShare = 1.0 / 64
)

// remembered returns a cache of what this instance remembers of counters.
func remembered[V any]() *sizedlru.Cache[string, V] {
	return sizedlru.New(maxRemembered, sizedlru.Share(rememberedShare), func(id string, v V) int {
		return sizedlru.Entry + sizedlru.String(id) + int(unsafe.Sizeof(v))
	})
}

// New returns the store on base, whose counters are read with counters.
func New(base *shared.Base, counters Counters, opts Options) *Store {
	return &Store{db: base.DB, base: base, counters: counters, opts: opts,
		known: remembered[knownValue](), contended: remembered[bool](), marked: remembered[time.Time](), viewers: remembered[int]()}
}

// MaxReadsPerOp bounds the reads one op's share of an Apply comes to: per
// commit, the members or keys of its ops (one each) and a SUM (near a
// plain counter's bound, the guard too, and one more SUM once: a plain
// counter's group is never split, so its commits stay far below), for at
// most retry.MaxAttempts commits of its group and two more at each of the
// halvings of a batch of at most increment.MaxBatch.
var MaxReadsPerOp = 3 * (retry.MaxAttempts + 2*bits.Len(increment.MaxBatch))

// Apply commits ops to counter id, in one commit when it can, and returns
// one result per op, as internal/increment's rules say, each with its
// share of what the commits read (Result.Reads), which its request books.
// The counter is the one the ops were authorized on, read again only when
// that read is older than SHARD_COUNT_CACHE.
//
// A lost race with another instance (a key or a member written since it
// was read) re-reads and commits again; on a unique counter, a second
// loss splits the ops in two halves by user. Every result is applied
// exactly once or is an error; an UNAVAILABLE error may hide a commit that
// was applied after all (its answer was lost), which a retry with the same
// key settles.
func (s *Store) Apply(ctx context.Context, id string, ops []increment.Op) []increment.Result {
	results := make([]increment.Result, len(ops))
	ctx, reads := ledger.New(ctx, true)
	c, err := s.counterOf(ctx, id, ops)
	if err != nil {
		for i := range results {
			results[i] = increment.Result{Err: err, Reads: int(reads.Reads())}
		}
		return results
	}
	m := s.modeOf(c)
	known, rest := m.known(c, ops)
	for i, k := range known {
		results[i] = increment.Result{Delta: 1, Shard: k} // a known viewer's view reads nothing
	}
	others := make([]increment.Op, len(rest))
	for j, i := range rest {
		others[j] = ops[i]
	}
	if len(others) == 0 {
		return results
	}
	for j, r := range s.apply(ctx, c, m, others) {
		results[rest[j]] = r
	}
	// The commits read for every op in them: each op's request books its
	// share.
	share := (int(reads.Reads()) + len(others) - 1) / len(others)
	for _, i := range rest {
		results[i].Reads = share
	}
	return results
}

// apply commits ops to counter c of mode m, as Apply says.
func (s *Store) apply(ctx context.Context, c counter.Counter, m commitMode, ops []increment.Op) []increment.Result {
	b := increment.New(c, m.shard(c, ops), ops)
	what := fmt.Sprintf("counter %q: an Idempotency-Key, a member, or the value near the bound,", c.ID)
	for b.Next() {
		err := retry.Raced(what, func(try int) (bool, error) {
			raced, err := s.commit(ctx, b, m)
			if raced && try >= 2 && b.SplitByUser() {
				return false, nil
			}
			return raced, err
		})
		if err != nil {
			b.Fail(err)
		}
	}
	return b.Results()
}

// counterOf is the counter the ops are committed to: the latest version
// their callers read, while fresh; else read again (from this instance's
// cache, which another request may have refreshed).
func (s *Store) counterOf(ctx context.Context, id string, ops []increment.Op) (counter.Counter, error) {
	var latest *increment.Op
	for i := range ops {
		if op := &ops[i]; op.Counter.ID != "" && (latest == nil || op.Counter.Version.After(latest.Counter.Version)) {
			latest = op
		}
	}
	if latest != nil && s.base.Now().Before(latest.Fresh) {
		return latest.Counter, nil
	}
	c, _, err := s.counters.LiveOrNewCached(ctx, id)
	return c, err
}

// commit makes one attempt at committing the pending ops, and reports
// whether it lost a race with ops still pending; every other outcome
// settles them, or is an error for them.
func (s *Store) commit(ctx context.Context, b *increment.Batch, m commitMode) (bool, error) {
	id := b.Counter.ID
	members, err := m.read(ctx, b)
	if err != nil || len(b.Pending()) == 0 {
		return false, err
	}
	if b.Outdated(members) {
		return s.raced(ctx, b, m)
	}
	plan := b.Plan(members, s.base.Now())
	if m.unchanged(plan) {
		// Nothing changes: every op is a no-op without a key, or a viewer
		// every sketch holds already.
		return false, m.landed(b, plan, nil)
	}
	writes, shard, marks := s.writes(b, plan, m, trace.SpanContextFromContext(ctx))
	start := s.base.Now()
	resp, err := s.db.Commit(ctx, writes...)
	if shard {
		// A commit that writes the shard (a switch of choices too) tells
		// of its contention.
		s.noteContention(id, s.base.Now().Sub(start), err)
	}
	switch fs.Code(err) {
	case codes.OK:
		if plan.Creates {
			// Known from when the commit was sent: its key for the marker.
			b.Counter = s.counters.FirstUsed(b.Counter, resp, len(writes)-1, start)
		}
		if marks {
			s.noteMarked(b.Counter, start)
		}
		return false, m.landed(b, plan, resp)
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
		// A key's record, a member or a sketch changed since it was read,
		// or the counter was created.
		return s.raced(ctx, b, m)
	}
	return false, fs.Classify(err, "increment "+id)
}

// raced follows a lost race: the counter read again (when it was read
// absent), and the pending keys' records, which settle the ops they
// answer; it reports whether ops are left to commit.
func (s *Store) raced(ctx context.Context, b *increment.Batch, m commitMode) (bool, error) {
	if err := s.reread(ctx, b); err != nil {
		return false, err
	}
	m.raced(b)
	records, err := s.readRecords(ctx, b)
	if err != nil {
		return false, err
	}
	return b.Raced(records, s.base.Now()), nil
}

// writes is the commit of plan: the shard's change (as the counter's mode
// writes it), each member document created, changed or deleted, each
// key's record, then the activity marker when this instance has not
// marked the counter lately, the mode's last writes (the bound's guard),
// and the counter's creation (last). shard reports whether it writes the
// shard, marks whether it marks.
func (s *Store) writes(b *increment.Batch, plan increment.Plan, m commitMode, span trace.SpanContext) (writes []*pb.Write, shard, marks bool) {
	id := b.Counter.ID
	if plan.WriteShard {
		change := shared.ShardChange{Count: plan.Net, Commits: 1, Counts: plan.Counts}
		if contended, _ := s.contended.Get(id); contended {
			change.Slow = 1
		}
		var w *pb.Write
		w, writes = m.shardWrites(b, change)
		if shard = w != nil; shard {
			writes = append([]*pb.Write{withTraceparent(w, span)}, writes...)
		}
	}
	for _, j := range plan.Joins {
		// uid, counter_id and kind: a user's likes are one collection-group
		// query (members where uid == me and kind == "likes").
		fields := map[string]*pb.Value{dm.FieldUID: fs.StringValue(j.User), dm.FieldCounterID: fs.StringValue(id)}
		if b.Counter.Kind != "" {
			fields[dm.FieldKind] = fs.StringValue(b.Counter.Kind)
		}
		if j.Choice != "" {
			fields[dm.FieldChoice] = fs.StringValue(j.Choice)
		}
		w := fs.CreateWrite(s.db.Name(dm.Member(id, j.User)), fields)
		if !j.Version.IsZero() { // over an orphan's document
			w = fs.ReplaceWrite(s.db.Name(dm.Member(id, j.User)), fields, j.Version)
		}
		w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldJoinedAt)}
		writes = append(writes, w)
	}
	for _, w := range plan.Switches {
		fields := map[string]*pb.Value{dm.FieldChoice: fs.StringValue(w.Choice)}
		writes = append(writes, fs.UpdateWrite(s.db.Name(dm.Member(id, w.User)), fields, []string{dm.FieldChoice}, w.Version))
	}
	for _, l := range append(plan.Leaves, plan.Orphans...) {
		writes = append(writes, fs.DeleteWrite(s.db.Name(dm.Member(id, l.User)), l.Version))
	}
	for _, k := range plan.Records {
		writes = append(writes, s.recordWrite(b.Counter, k, m.recordFields(k.Record)))
	}
	if marks = s.markDue(b.Counter); marks {
		writes = append(writes, s.base.ActivityWrite(id, time.Time{}))
	}
	writes = append(writes, m.lastWrites(b)...)
	if plan.Creates {
		writes = append(writes, s.counters.FirstUseWrite(b.Counter))
	}
	return writes, shard, marks
}

// saturated refuses a commit whose shard write (the first of resp, of
// plan) Firestore's increment left at int64's limit: part of a delta was
// lost, written outside the functions. DATA_LOSS, never a success. It
// returns the shard's count as committed.
func saturated(b *increment.Batch, plan increment.Plan, resp *pb.CommitResponse) (int64, bool, error) {
	if !plan.WriteShard || resp == nil {
		return 0, false, nil
	}
	v, ok := fs.TransformResult(resp.GetWriteResults()[0], dm.FieldCount, shared.ShardFields)
	if ok && counter.Saturated(v) {
		return v, ok, errs.New(errs.DataLoss, "shard %d of counter %q reached int64's limit, so part of this increment may be lost: its shards were written outside the functions", b.Shard, b.Counter.ID)
	}
	return v, ok, nil
}

// noteContention remembers whether the last commit of counter id was slow
// or refused for contention, so the next commit records it on its shard.
func (s *Store) noteContention(id string, took time.Duration, err error) {
	slow := took > s.opts.SlowCommit && s.opts.SlowCommit > 0
	switch fs.Code(err) {
	case codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
		slow = true
	}
	if slow {
		s.contended.Add(id, true)
	} else if err == nil {
		s.contended.Remove(id)
	}
}

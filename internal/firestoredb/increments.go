package firestoredb

import (
	"context"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
)

// IncrementOp is one increment of a shared commit.
type IncrementOp struct {
	Delta int64
	// User and Key scope an idempotency key: the same key from two users
	// is two keys. An empty Key applies the delta without a record. On a
	// unique counter, User is the member the op adds (+1) or removes (−1).
	User, Key string
	// Ledger is the ledger of the request the op came from, which books
	// its share of what the commit reads (nil: none).
	Ledger *ledger.Ledger
}

// MaxReadsPerOp bounds the reads one op's share of an Apply comes to: per
// commit, the members or keys of its ops (one each) and a SUM (near a
// plain counter's bound, the guard too, and one more SUM once: a plain
// counter's group is never halved, so its 5 commits stay far below), for at most
// maxApplyAttempts commits of its group and two more at each halving of a
// batch of at most 500.
const MaxReadsPerOp = 3 * (maxApplyAttempts + 2*9)

// IncrementResult is the outcome of one IncrementOp.
type IncrementResult struct {
	Delta int64
	// Shard is the shard written; -1 when none was (a unique counter's op
	// that changed nothing).
	Shard int
	// Replayed is true when the key had been used: nothing was applied
	// and the first outcome is returned.
	Replayed bool
	// Member and Changed, on a unique counter: whether the user is a
	// member after the op, and whether the op made it so.
	Member, Changed bool
	Err             error
}

// Apply commits ops to counter id in one commit and returns one result
// per op:
//
//   - a plain counter's deltas are added to one random shard, unless one
//     would take the counter past ±counter.MaxCount (OUT_OF_RANGE, that op
//     alone);
//   - a unique counter's ops add (+1) or remove (−1) their user, in
//     arrival order: a member document is created or deleted with a
//     precondition in the same commit as the shard's ±1, so the count is
//     always the number of members; an op that changes nothing writes
//     nothing;
//   - each idempotency key's record is created in the same commit. A key
//     used before, or twice among ops, replays its first outcome (or is
//     ALREADY_EXISTS with another delta) without failing the others.
//
// A lost race with another instance (a key or a member written since it
// was read) re-reads and commits again; on a unique counter, a second
// loss splits the ops in two halves by user, each committed on its own,
// so one user toggling a like from several devices at once fails only
// their own ops. Every result is applied exactly once or is an error; an
// UNAVAILABLE error may hide a commit that was applied after all (its
// answer was lost), which a retry with the same key settles.
func (s *Increments) Apply(ctx context.Context, id string, ops []IncrementOp) []IncrementResult {
	ctx, reads := ledger.New(ctx, true)
	defer func() {
		// The commits read for every op in them: each op's request books
		// its share.
		share := (int(reads.Reads()) + len(ops) - 1) / len(ops)
		for _, op := range ops {
			op.Ledger.Book(share)
		}
	}()
	results := make([]IncrementResult, len(ops))
	c, err := s.liveOrNew(ctx, id, true)
	if err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	p := &incrementCommit{s: s, c: c, shard: s.intn(id, c.NumShards), ops: ops, results: results, replace: map[int]time.Time{}}
	p.dedupe()
	for groups := [][]int{p.pending}; len(groups) > 0; {
		p.pending, groups = groups[0], groups[1:]
		for attempt := 1; len(p.pending) > 0; attempt++ {
			if !p.commit(ctx) {
				break
			}
			if attempt == maxApplyAttempts {
				p.fail(errs.Retryable(nil, retryAfter, "counter %q: the same Idempotency-Key or member, or a value near the bound, is being changed concurrently; retry", id))
				break
			}
			if halves := p.splitByUser(); attempt >= 2 && halves != nil {
				groups = append(halves, groups...)
				break
			}
		}
	}
	p.resolveDuplicates()
	return results
}

// maxApplyAttempts bounds the commits of one group of ops: each retry
// follows a concurrent change of a key's record or of a member, made by
// another instance; that many in a row means something keeps rewriting
// them.
const maxApplyAttempts = 5

// commit makes one attempt at committing the pending ops and reports
// whether it lost a race (a key's record or a member changed since it was
// read) with ops still pending; every other outcome settles or fails them.
func (p *incrementCommit) commit(ctx context.Context) bool {
	p.span = trace.SpanContextFromContext(ctx)
	if err := p.prepare(ctx); err != nil {
		p.fail(err)
		return false
	}
	writes := p.writes()
	if len(writes) == 0 {
		p.settle(nil) // nothing changes: every op is a no-op without a key
		return false
	}
	start := p.s.now()
	resp, err := p.s.db.commit(ctx, writes...)
	if p.net != 0 || !p.c.Unique {
		p.s.noteContention(p.c.ID, p.s.now().Sub(start), err)
	}
	switch code(err) {
	case codes.OK:
		p.created(resp, start) // a first use's counter, with its creation time: the key it is marked under
		if p.marks {
			p.s.noteMarked(p.c, start)
		}
		p.settle(resp)
		return false
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
		// A key's record, or a member, changed since it was read, or the
		// counter was created.
		if err := p.reread(ctx); err != nil {
			p.fail(err)
			return false
		}
		if err := p.settleUsedKeys(ctx); err != nil {
			p.fail(err)
		}
		return len(p.pending) > 0
	}
	p.fail(classify(err, "increment "+p.c.ID))
	return false
}

// splitByUser splits a unique counter's pending ops into two halves by
// user (alternately, in order of appearance), each user's ops in one half
// in their order; nil when there is one user (or the counter is not unique: only keys race there, and
// settleUsedKeys answers them).
func (p *incrementCommit) splitByUser() [][]int {
	if !p.c.Unique {
		return nil
	}
	half := map[string]int{} // each user's half: 0 or 1, in order of appearance
	for _, i := range p.pending {
		if _, ok := half[p.ops[i].User]; !ok {
			half[p.ops[i].User] = len(half) % 2
		}
	}
	if len(half) < 2 {
		return nil
	}
	var a, b []int
	for _, i := range p.pending {
		if half[p.ops[i].User] == 0 {
			a = append(a, i)
		} else {
			b = append(b, i)
		}
	}
	return [][]int{a, b}
}

// Increments apply increments and likes to the shards of counters.
type Increments struct{ *base }

// incrementCommit is the state of one Apply: the ops still pending and
// what the next commit will write for them.
type incrementCommit struct {
	s       *Increments
	c       counter.Counter
	shard   int
	ops     []IncrementOp
	results []IncrementResult
	// pending are the ops to commit; dupOf[i] >= 0 is the earlier op with
	// the same key, whose outcome op i shares; replace holds the update
	// time of an expired record to overwrite.
	pending []int
	dupOf   []int
	replace map[int]time.Time
	// members is the membership of the users of a unique counter's pending
	// ops, as read before the commit.
	members map[string]member
	// Set by writes: the shard's change, whether it is written, and each
	// pending op's outcome if the commit succeeds.
	net        int64
	shardWrite bool
	marks      bool              // the commit marks the counter active
	guard      *time.Time        // near the bound: the guard document's version the sum saw (zero: absent)
	span       trace.SpanContext // the flush's, set on the shard it writes
	outcome    map[int]IncrementResult
}

func (p *incrementCommit) fail(err error) {
	for _, i := range p.pending {
		p.results[i].Err = err
	}
	p.pending = nil
}

// prepare reads what the next commit depends on: the members of a unique
// counter's pending ops, or a plain counter's value, against which ops
// that would leave the bound are refused.
func (p *incrementCommit) prepare(ctx context.Context) error {
	if p.c.Unique {
		return p.readMembers(ctx)
	}
	return p.checkBound(ctx)
}

// writes is the commit of the pending ops: the shard's change, then each
// member document created or deleted, then each key's record.
func (p *incrementCommit) writes() []*pb.Write {
	p.outcome = map[int]IncrementResult{}
	var writes []*pb.Write
	if p.c.Unique {
		writes = p.memberWrites()
	} else {
		p.net = 0
		for _, i := range p.pending {
			p.net += p.ops[i].Delta // within the bound: checkBound
			p.outcome[i] = IncrementResult{Delta: p.ops[i].Delta, Shard: p.shard}
		}
		p.shardWrite = true
	}
	if p.shardWrite {
		change := shardChange{Count: p.net, Commits: 1}
		if contended, _ := p.s.contended.Get(p.c.ID); contended {
			change.Slow = 1
		}
		writes = append([]*pb.Write{withTraceparent(p.s.shardWrite(p.c.ID, p.shard, change), p.span)}, writes...)
	}
	if p.creates() && len(writes) == 0 && !p.changesAKeyed() {
		// An unlike of a counter nobody used changes nothing: it creates
		// nothing either, not even its key's record (a retry finds the
		// same nothing). A like and an unlike of one user in one batch
		// change nothing in total, but each answers changed: their keys'
		// records, and the counter, are written.
		return nil
	}
	writes = append(writes, p.keyWrites()...)
	// The activity index, in this commit when the instance has not
	// marked the counter lately (internal/activity).
	if p.marks = len(writes) > 0 && p.s.markDue(p.c); p.marks {
		writes = append(writes, p.s.activityWrite(p.c.ID, time.Time{}))
	}
	if p.guard != nil && len(writes) > 0 {
		writes = append(writes, p.guardWrite())
	}
	return p.withCreation(writes)
}

// changesAKeyed reports whether a pending op with a key changes
// something (its record must be written, for a retry to replay it).
func (p *incrementCommit) changesAKeyed() bool {
	for _, i := range p.pending {
		if p.ops[i].Key != "" && p.outcome[i].Changed {
			return true
		}
	}
	return false
}

// settle records the outcome of a successful commit (resp nil: nothing
// had to be written). A shard that Firestore's increment left at int64's
// limit lost part of a delta, written outside the functions: DATA_LOSS,
// never a success.
func (p *incrementCommit) settle(resp *pb.CommitResponse) {
	if p.shardWrite && resp != nil {
		v, ok := transformResult(resp.GetWriteResults()[0], fieldCount, []string{fieldCommits, fieldCount, fieldSlow})
		if ok && !p.c.Unique {
			p.s.noteKnown(p.c.ID, p.net, v)
		}
		if ok && counter.Saturated(v) {
			p.fail(errs.New(errs.DataLoss, "shard %d of counter %q reached int64's limit, so part of this increment may be lost: its shards were written outside the functions", p.shard, p.c.ID))
			return
		}
	}
	for _, i := range p.pending {
		p.results[i] = p.outcome[i]
	}
	p.pending = nil
}

// transformResult returns the value a field transform of a write left,
// from the commit's answer; transforms lists the write's transformed
// fields in order.
func transformResult(r *pb.WriteResult, field string, transforms []string) (int64, bool) {
	for i, f := range transforms {
		if f == field && i < len(r.GetTransformResults()) {
			if v, ok := r.GetTransformResults()[i].GetValueType().(*pb.Value_IntegerValue); ok {
				return v.IntegerValue, true
			}
		}
	}
	return 0, false
}

// noteContention remembers whether the last commit of counter id was slow
// or refused for contention, so the next commit records it on its shard.
func (s *Increments) noteContention(id string, took time.Duration, err error) {
	slow := took > s.opts.SlowCommit && s.opts.SlowCommit > 0
	switch code(err) {
	case codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
		slow = true
	}
	if slow {
		s.contended.Add(id, true)
	} else if err == nil {
		s.contended.Remove(id)
	}
}

// Package rollup keeps a counter's total on its counter document, written at
// most once per cadence, and exact whatever the delivery of shard events:
// duplicated, reordered, delayed, retried or lost.
//
// It is state-based. An event only says "counter C had a shard written at
// time W". A roll-up sums all shards with a SUM aggregation at a read time
// R and stores (count, rollup_as_of = R), replacing the counter document
// only if it is still the version read, so a stale total never overwrites a
// newer one and rollup_as_of never goes backwards. The result depends only
// on the shards.
//
// # Slots
//
// Time is cut into slots one cadence long, in Firestore's clock. The write
// at W belongs to the slot due at the first multiple of the cadence after W
// (slotFor). Its event claims that slot (a marker document created with a
// precondition, naming the event) unless another event did; the holder
// waits until the slot is due and rolls up; the others return at once. A
// roll-up due at D reads at R >= D, so it includes every write of the slot.
//
// # The invariant
//
// A slot's holder returns nil only once the counter document holds a
// roll-up with rollup_as_of >= the slot's due time. Every path that gives
// up a slot (a Firestore error, a cancelled or timed-out context) returns
// an error instead, so Eventarc delivers the holder's event again (the
// trigger is deployed with --retry); the retry recomputes the same slot,
// finds its own claim, and holds it again. ensure is the one place that
// returns nil for a holder, and it checks rollup_as_of >= due right before.
//
// So an event that defers to a holder is safe: the holder, or its retry,
// rolls up after its write. An event arriving after its slot's roll-up
// should have happened (late) does not trust a holder: it reads the
// counter document and rolls up itself if its write is still missing.
//
// Cadence: a roll-up is written only at a read time R >= the document's last
// write + cadence (checked against R itself, not a local clock), so the
// counter document is written at most once per cadence by roll-ups; only
// Reconcile and resharding write it sooner.
//
// The skew margin is added to every due time before a sum, so the common
// case reads after it even when this instance's clock is a little behind
// Firestore's; R is then checked exactly.
package rollup

import (
	"context"
	"time"
	"unsafe"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/sizedlru"
)

// Store is the storage the roll-up runs on (the service's reconcileStores:
// counterstore, memberstore and rollupstore together). Its
// errors are classified: errs UNAVAILABLE means a retry may help, NOT_FOUND
// that the counter is gone.
type Store interface {
	// Live reads the counter document now; NOT_FOUND if the counter does
	// not exist or is deleted.
	Live(ctx context.Context, id string) (counter.Counter, error)
	// Sums sums counter c's shards at a read time (zero: now) as its mode
	// says (their count, a choice counter's counts, a distinct counter's
	// estimate) and returns the snapshot's read time.
	Sums(ctx context.Context, c counter.Counter, at time.Time) (counter.Sums, time.Time, error)
	// Activity sums the shards' commits, and those that followed a slow
	// one (automatic sharding reads it).
	Activity(ctx context.Context, id string) (commits, slow int64, err error)
	// Audit counts the members of counter c (of a mode with members) at
	// a read time, and of a choice counter those holding each choice.
	Audit(ctx context.Context, c counter.Counter, at time.Time) (counter.Sums, error)
	// NameMemberKinds gives a page of the member documents of unique
	// counter c written before they named their kind, uid and counter
	// what they lack, and reports whether all do now.
	NameMemberKinds(ctx context.Context, c counter.Counter, max int) (bool, error)
	// WriteRollup writes r if the document is still at r.Next.Version and
	// returns the new version; ok is false if it changed.
	WriteRollup(ctx context.Context, r counter.Rollup) (newVersion time.Time, ok bool, err error)
	// ClaimSlot records holder as the holder of the slot due at due unless
	// one is recorded, and returns the slot's holder.
	ClaimSlot(ctx context.Context, id string, due time.Time, holder string) (string, error)
	// ReleaseSlot deletes the slot due at due: its holder found the
	// counter gone.
	ReleaseSlot(ctx context.Context, id string, due time.Time) error
	// MergeShards merges shards to..from-1 into shards k mod to.
	MergeShards(ctx context.Context, id string, to, from int) (int, error)
	// Purge goes on deleting what is under a deleted counter, and
	// reports whether it is gone for good.
	Purge(ctx context.Context, id string) (bool, error)
}

// Clock is the roller's time; tests inject a simulated one.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or returns ctx's error when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the instance's clock (time.Now unless given) and real
// timers.
type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SkewMargin is added to a slot's due time before summing the shards, so
// that the sum usually reads after it even when this instance's clock is a
// little behind Firestore's.
const SkewMargin = 25 * time.Millisecond

// Options configure a Roller.
type Options struct {
	Cadence      time.Duration
	AutoSharding AutoSharding
	// Kinds are the app's kinds: which may grow (AutoSharding), and which
	// mirror their counts into the app's documents.
	Kinds counter.Kinds
	// Clock is the roller's time and sleep (nil: Now's, with real timers);
	// Now the instance's clock (nil: time.Now).
	Clock Clock
	Now   func() time.Time
}

// Roller rolls counters up; it is safe for concurrent use.
type Roller struct {
	store   Store
	cadence time.Duration
	auto    AutoSharding
	kinds   counter.Kinds
	clock   Clock
	known   *sizedlru.Cache[string, knowledge]
}

// knowledge is what this instance last learnt of a counter's roll-up, so
// that duplicate and queued events return without reading anything.
type knowledge struct {
	asOf   time.Time // a roll-up includes every write up to asOf
	slot   time.Time // the latest slot known to be claimed…
	holder string    // …and by whom
}

// maxKnown bounds the counters remembered, and knownShare the memory they
// take (a 64th of the instance's); the least recently used go first.
const (
	maxKnown   = 100_000
	knownShare = 1.0 / 64
)

// New returns a Roller writing each counter at most once per cadence.
func New(store Store, opts Options) *Roller {
	known := sizedlru.New(maxKnown, sizedlru.Share(knownShare), func(id string, k knowledge) int {
		return sizedlru.Entry + sizedlru.String(id) + int(unsafe.Sizeof(k)) + len(k.holder)
	})
	clock := opts.Clock
	if clock == nil {
		clock = realClock{now: opts.Now}
		if opts.Now == nil {
			clock = realClock{now: time.Now}
		}
	}
	auto := opts.AutoSharding
	auto.Kinds = opts.Kinds
	return &Roller{store: store, cadence: opts.Cadence, auto: auto, kinds: opts.Kinds, clock: clock, known: known}
}

// Event is a shard write as its event tells it.
type Event struct {
	// ID is the CloudEvent id, the same on every delivery of the event.
	ID        string
	CounterID string
	// WrittenAt is at or after the write's commit time, in Firestore's
	// clock.
	WrittenAt time.Time
	// Deleted: the write deleted the shard.
	Deleted bool
	// LastWrittenAt is, of a deletion, when the deleted shard was last
	// written (its old document's update time, exact); zero if unknown.
	LastWrittenAt time.Time
}

// slotFor returns the due time of the slot of a write at w: the first
// multiple of the cadence strictly after w.
func (r *Roller) slotFor(w time.Time) time.Time {
	c := r.cadence.Nanoseconds()
	n := w.UnixNano()
	return time.Unix(0, (n/c+1)*c)
}

// grace is how long after a slot's due time its holder is trusted to
// finish: one cadence for the document's own cadence, and time for a few
// Firestore calls. Past it, an event whose write is not rolled up does it.
func (r *Roller) grace() time.Duration { return r.cadence + 2*time.Second }

// Settled reports whether an event whose Include returned err is done with:
// its roll-up is done (nil), its counter is gone (NOT_FOUND), it cannot be
// used (INVALID_ARGUMENT), or its counter's data can never roll up
// (DATA_LOSS: written outside the functions; logged, and reconcile reports
// it too). Any other error, whatever its class, asks for the event to be
// delivered again: a holder that gives up its slot without a roll-up would
// strand the writes that deferred to it.
func Settled(err error) bool {
	switch errs.CodeOf(err) {
	case errs.NotFound, errs.InvalidArgument, errs.DataLoss:
		return true
	}
	return err == nil
}

// Include returns nil once a roll-up of the event's counter includes the
// event's write, or a holder of its slot (alive, or to be redelivered) will
// see to it; otherwise the error that prevented it. An errs UNAVAILABLE
// error (or a context error) asks for the event to be delivered again.
func (r *Roller) Include(ctx context.Context, ev Event) error {
	id := ev.CounterID
	events.Add(ctx, 1)
	if ev.Deleted {
		// Most deletions are a purge's, of a deleted counter's shards: a
		// slot claimed for one would outlive the tombstone. A live
		// counter's shard deleted (by hand) rolls up like any write.
		c, err := r.store.Live(ctx, id)
		if err != nil {
			return err // NOT_FOUND: settled
		}
		// Or the purge of an earlier incarnation, as the id was created
		// again: that shard was last written before this counter existed,
		// and nothing of this one changed. (WrittenAt cannot tell: an
		// emulator's deletion time is cut to the second.)
		if !ev.LastWrittenAt.IsZero() && ev.LastWrittenAt.Before(c.CreatedAt) {
			return nil
		}
	}
	due := r.slotFor(ev.WrittenAt)
	// Covered means the slot's roll-up is done, not merely one after this
	// write: this event may be the slot's holder, redelivered after it
	// failed, and then others' writes depend on it.
	k, _ := r.known.Get(id)
	if !k.asOf.Before(due) {
		return nil // a duplicate, or queued behind a roll-up
	}
	if r.clock.Now().After(due.Add(r.grace())) {
		// Late: the slot's roll-up should exist. Trust the document, not
		// a holder that may be gone.
		c, err := r.store.Live(ctx, id)
		if err != nil {
			return err
		}
		r.learn(id, knowledge{asOf: c.AsOf})
		if !c.AsOf.Before(due) {
			return nil
		}
		if err := r.ensure(ctx, id, due); err != nil {
			return err
		}
		recordLag(ctx, r.clock.Now(), ev.WrittenAt) // a late event's write, rolled up only now
		return nil
	}
	if k.slot.Equal(due) && k.holder != ev.ID {
		return nil // another event of this instance holds the slot
	}
	holder, err := r.store.ClaimSlot(ctx, id, due, ev.ID)
	if err != nil {
		return err
	}
	r.learn(id, knowledge{slot: due, holder: holder})
	if holder != ev.ID {
		return nil // the holder (or its redelivery) rolls up after our write
	}
	if err := r.ensure(ctx, id, due); err != nil {
		if errs.Is(err, errs.NotFound) {
			// Gone, or going: its purge may have listed the slots before
			// this claim, so the claim goes with the holder (if this fails,
			// the event comes again and finds its claim).
			if rerr := r.store.ReleaseSlot(ctx, id, due); rerr != nil {
				return rerr
			}
		}
		return err
	}
	recordLag(ctx, r.clock.Now(), ev.WrittenAt) // the holder's write is its slot's first here
	return nil
}

// ensure returns nil only once the counter document holds a roll-up as of
// due or later, writing one when needed; it is the one place a slot's
// holder gives up its slot without an error.
func (r *Roller) ensure(ctx context.Context, id string, due time.Time) error {
	log := logging.FromContext(ctx)
	wake := due
	for {
		if err := r.sleepUntil(ctx, wake.Add(SkewMargin)); err != nil {
			return err
		}
		c, err := r.store.Live(ctx, id)
		if err != nil {
			return err
		}
		r.learn(id, knowledge{asOf: c.AsOf})
		if !c.AsOf.Before(due) {
			return nil // the invariant: a roll-up as of due or later exists
		}
		// Not before due, nor within a cadence of the document's last write.
		wake = laterOf(due, c.Version.Add(r.cadence))
		if r.clock.Now().Before(wake.Add(SkewMargin)) {
			continue // sleep, then read again: it may change meanwhile
		}
		merged, err := r.finishMerge(ctx, &c)
		if err != nil {
			return err
		}
		sums, readTime, err := r.sum(ctx, c)
		if err != nil {
			return err
		}
		if readTime.Before(wake) {
			// This clock runs ahead of Firestore's: wait the difference.
			if err := r.clock.Sleep(ctx, wake.Sub(readTime)); err != nil {
				return err
			}
			continue
		}
		ok, err := r.write(ctx, c, sums, readTime, merged, counter.Sums{})
		if err != nil {
			return err
		}
		if ok {
			log.Debug("rolled up", "count", sums.Count, "as_of", readTime, "previous_count", c.Count)
			if !readTime.Before(due) {
				return nil // the invariant: the roll-up just written is as of due or later
			}
		}
		// The document changed since it was read: read it again.
	}
}

func (r *Roller) sleepUntil(ctx context.Context, t time.Time) error {
	if d := t.Sub(r.clock.Now()); d > 0 {
		return r.clock.Sleep(ctx, d)
	}
	return ctx.Err()
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// learn merges what was just observed into known.
func (r *Roller) learn(id string, k knowledge) {
	old, _ := r.known.Get(id)
	if k.asOf.After(old.asOf) {
		old.asOf = k.asOf
	}
	if k.slot.After(old.slot) {
		old.slot, old.holder = k.slot, k.holder
	}
	r.known.Add(id, old)
}

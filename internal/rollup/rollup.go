// Package rollup keeps a counter's total on its counter document, written at
// most once per cadence, and exact whatever the delivery of shard events:
// duplicated, reordered or lost.
//
// It is state-based. An event only says "counter C had a shard written at
// time T". The roll-up sums all shards with a SUM aggregation at a read time
// R and stores (count, rollup_as_of = R), replacing the counter document
// only if it is still the version read, so a stale total never overwrites a
// newer one. Replaying or reordering events cannot change the result, which
// depends only on the shards; a lost event is healed by any later event of
// the same counter, or by Reconcile.
//
// Cadence: a roll-up runs no earlier than one cadence after the counter
// document's last write. An event arriving before that claims the roll-up
// "slot" due at that time (a marker document created with a precondition) and
// sleeps until it is due, then rolls up; events finding the slot taken return
// at once, since that roll-up will read after their write. So each write
// costs its event about one document read, and each counter has at most one
// event waiting per cadence, which suits functions run one request per
// instance.
//
// The event that rolled up then follows the counter: once per cadence it
// claims the next slot and rolls up again, until a cadence passes without a
// change (its last write then only refreshes rollup_as_of). While a counter is
// hot its roll-up therefore keeps its cadence even when events arrive late, as
// they do from the emulator, which delivers them one at a time.
package rollup

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// State is what the roll-up needs of a counter document.
type State struct {
	Count int64
	// AsOf is the read time of the sum stored in Count.
	AsOf time.Time
	// Version is the document's update time, for the write precondition.
	Version time.Time
}

// Store is the storage the roll-up runs on (firestoredb.Counters).
type Store interface {
	// RollupState reads the counter document; an errs NOT_FOUND error if
	// it does not exist.
	RollupState(ctx context.Context, id string) (State, error)
	// ShardTotal sums the shards and returns the snapshot's read time.
	ShardTotal(ctx context.Context, id string) (int64, time.Time, error)
	// WriteRollup stores total and asOf if the document is still at
	// version and returns the new version; ok is false if the document
	// changed.
	WriteRollup(ctx context.Context, id string, total int64, asOf, version time.Time) (newVersion time.Time, ok bool, err error)
	// ClaimSlot records that an event will roll the counter up at due; it
	// returns false, nil if another event already did.
	ClaimSlot(ctx context.Context, id string, due time.Time) (bool, error)
}

// SkewMargin is added to a slot's due time before its holder sums the
// shards, so that writes seen by other instances just before the due time,
// by clocks a little ahead, are included.
const SkewMargin = 25 * time.Millisecond

// MaxFollow bounds how long the event that rolled a counter up keeps
// following it; the next event takes over.
const MaxFollow = time.Minute

// Roller rolls counters up; it is safe for concurrent use.
type Roller struct {
	store   Store
	cadence time.Duration
	log     *slog.Logger
	now     func() time.Time

	mu    sync.Mutex
	known map[string]knowledge
}

// knowledge is what this process last learnt of a counter's roll-up, so
// that duplicate and queued events return without reading anything.
type knowledge struct {
	asOf time.Time // a roll-up includes every write up to asOf
	slot time.Time // a roll-up is claimed for this due time
}

// maxKnown bounds the memory of known; past it the map starts over.
const maxKnown = 100_000

// New returns a Roller writing each counter at most once per cadence.
func New(store Store, cadence time.Duration, log *slog.Logger) *Roller {
	return &Roller{store: store, cadence: cadence, log: log, now: time.Now, known: map[string]knowledge{}}
}

// Include returns once a roll-up of counter id that includes a shard write
// made at writtenAt exists or is claimed, or with the error that prevented
// it. Store errors are returned as is (firestoredb.Transient tells whether a
// retry can help).
func (r *Roller) Include(ctx context.Context, id string, writtenAt time.Time) error {
	if r.coveredInMemory(id, writtenAt) {
		return nil
	}
	var claimed time.Time
	for {
		st, err := r.store.RollupState(ctx, id)
		if err != nil {
			return err
		}
		r.learn(id, knowledge{asOf: st.AsOf})
		if !st.AsOf.Before(writtenAt) {
			return nil
		}
		due := st.Version.Add(r.cadence)
		if wait := due.Sub(r.now()); wait > 0 {
			if !claimed.Equal(due) {
				ok, err := r.store.ClaimSlot(ctx, id, due)
				if err != nil {
					return err
				}
				r.learn(id, knowledge{slot: due})
				if !ok {
					return nil // the slot's holder sums after our write
				}
				claimed = due
			}
			select {
			case <-time.After(wait + SkewMargin):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue // re-read: another roll-up may have run meanwhile
		}
		total, readTime, err := r.store.ShardTotal(ctx, id)
		if err != nil {
			return err
		}
		version, ok, err := r.store.WriteRollup(ctx, id, total, readTime, st.Version)
		if err != nil {
			return err
		}
		if ok {
			r.learn(id, knowledge{asOf: readTime})
			r.log.Info("rolled up", "counter_id", id, "count", total, "as_of", readTime, "previous_count", st.Count)
			r.follow(ctx, id, total, version)
			return nil
		}
		// Another roll-up wrote first and may have read before our write.
	}
}

// follow rolls the counter up once per cadence while its total changes,
// within MaxFollow and ctx's deadline. The write that brought us here is
// included already, so failures are logged, not returned.
func (r *Roller) follow(ctx context.Context, id string, total int64, version time.Time) {
	deadline := r.now().Add(MaxFollow)
	if d, ok := ctx.Deadline(); ok && d.Add(-2*r.cadence).Before(deadline) {
		deadline = d.Add(-2 * r.cadence)
	}
	for {
		due := version.Add(r.cadence)
		if due.Add(SkewMargin).After(deadline) {
			return
		}
		ok, err := r.store.ClaimSlot(ctx, id, due)
		if err != nil || !ok {
			if err != nil {
				r.log.Warn("stopped following a counter", "counter_id", id, "error", err.Error())
			}
			return // someone else holds the next roll-up
		}
		r.learn(id, knowledge{slot: due})
		select {
		case <-time.After(due.Sub(r.now()) + SkewMargin):
		case <-ctx.Done():
			return
		}
		next, readTime, err := r.store.ShardTotal(ctx, id)
		if err != nil {
			r.log.Warn("stopped following a counter", "counter_id", id, "error", err.Error())
			return
		}
		newVersion, ok, err := r.store.WriteRollup(ctx, id, next, readTime, version)
		if err != nil || !ok {
			if err != nil {
				r.log.Warn("stopped following a counter", "counter_id", id, "error", err.Error())
			}
			return
		}
		r.learn(id, knowledge{asOf: readTime})
		if next == total {
			return // quiet for a cadence
		}
		r.log.Info("rolled up", "counter_id", id, "count", next, "as_of", readTime, "previous_count", total)
		total, version = next, newVersion
	}
}

func (r *Roller) coveredInMemory(id string, writtenAt time.Time) bool {
	r.mu.Lock()
	k := r.known[id]
	r.mu.Unlock()
	if !k.asOf.Before(writtenAt) {
		return true // a duplicate, or queued behind a roll-up
	}
	// A claimed roll-up that has not run yet will read after this write.
	return writtenAt.Before(k.slot) && r.now().Before(k.slot)
}

// learn merges what was just observed into known.
func (r *Roller) learn(id string, k knowledge) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.known[id]
	if !ok && len(r.known) >= maxKnown {
		clear(r.known)
	}
	if k.asOf.After(old.asOf) {
		old.asOf = k.asOf
	}
	if k.slot.After(old.slot) {
		old.slot = k.slot
	}
	r.known[id] = old
}

// Reconcile recomputes a counter's total and writes it if the stored one
// differs, whatever the cadence: it heals a roll-up whose last event was
// lost. It reports whether the total was corrected.
func (r *Roller) Reconcile(ctx context.Context, id string) (bool, error) {
	for range 3 {
		st, err := r.store.RollupState(ctx, id)
		if err != nil {
			return false, err
		}
		total, readTime, err := r.store.ShardTotal(ctx, id)
		if err != nil {
			return false, err
		}
		if total == st.Count {
			return false, nil
		}
		_, ok, err := r.store.WriteRollup(ctx, id, total, readTime, st.Version)
		if err != nil {
			return false, err
		}
		if ok {
			r.learn(id, knowledge{asOf: readTime})
			r.log.Warn("reconciled a stale roll-up", "counter_id", id, "count", total,
				"previous_count", st.Count, "previous_as_of", st.AsOf)
			return true, nil
		}
	}
	return false, fmt.Errorf("rollup: reconcile %s: the counter document keeps changing", id)
}

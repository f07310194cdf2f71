package windowstore

import (
	"context"
	"sync"
	"time"

	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/windows"
)

// Buckets of the version before carries: its roll-ups wrote a bucket's
// count and peaks but no carry, so a counter whose bucket of the current
// hour (or day) only that version wrote is in no list by carry, and counts
// in a rolling window at most its peak in the bucket before plus that
// count. While a current bucket holds such buckets, a ranking lists it by
// count too and bounds the counters beyond the lists by the sum of the
// two lists' last values as well (docs/design/windows.md, "Upgrading").

// upgraded remembers, by granularity, the earliest current bucket found to
// hold buckets and none of the version before: every later one holds none
// either, once no instance of it rolls up (which the design page says of a
// deploy rolling out); and what the last one looked at held, for a minute,
// so its counts are not taken again for every ranking.
type upgraded struct {
	mu      sync.Mutex
	since   map[windows.Granularity]time.Time
	looked  map[windows.Granularity]look
	looking map[windows.Granularity]bool // a look under way: the others take the bucket as holding them
}

// look is what a bucket was found to hold, taken as holding it until.
type look struct {
	start, until time.Time
	old          bool
}

// holdsOldFor is how long a bucket found holding buckets of the version
// before, or none at all, is taken to hold as much still.
const holdsOldFor = time.Minute

// holdsOld reports whether the bucket of g starting at start holds
// buckets of the version before carries, at read time at: two count
// aggregations (a read per 1,000 buckets each), at most once a minute for
// g, until a bucket of g holds buckets and none of them. They are the
// instance's reads, as the erasure gate's are: no ranking's budget pays
// for a busy hour's million buckets, one look at a time: a ranking that
// comes while one is under way takes the bucket as holding them (the safe
// answer, which costs it the list by count it pays for), and reads
// nothing.
func (s *Store) holdsOld(ctx context.Context, g windows.Granularity, start, at time.Time) bool {
	s.upgraded.mu.Lock()
	since, clean := s.upgraded.since[g]
	l := s.upgraded.looked[g]
	switch {
	case clean && !start.Before(since):
		s.upgraded.mu.Unlock()
		return false
	case l.start.Equal(start) && at.Before(l.until):
		s.upgraded.mu.Unlock()
		return l.old
	case s.upgraded.looking[g]:
		s.upgraded.mu.Unlock()
		return true
	}
	if s.upgraded.looking == nil {
		s.upgraded.looking = map[windows.Granularity]bool{}
	}
	s.upgraded.looking[g] = true
	s.upgraded.mu.Unlock()
	defer func() {
		s.upgraded.mu.Lock()
		s.upgraded.looking[g] = false
		s.upgraded.mu.Unlock()
	}()
	// The look is the instance's: a caller that gives up does not waste
	// what it read, and one that fails is taken as holding them for a
	// while too, so that no caller can have it read again at once.
	// Within half the caller's time left: the ranking has its lists to read
	// still (a busy hour's million buckets may take longer; the look then
	// fails, which is safe).
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(holdsOldFor) // a caller without a deadline (none deployed): half a minute
	}
	lookCtx, cancel := ledger.Own(ctx, "upgrade", time.Now().Add(time.Until(d)/2))
	defer cancel()
	all, err := s.db.CountOf(lookCtx, s.BucketsQuery(g, start, "", ByCount), at)
	var carried int64
	if err == nil {
		carried, err = s.db.CountOf(lookCtx, s.BucketsQuery(g, start, "", ByCarry(0)), at)
	}
	s.upgraded.mu.Lock()
	defer s.upgraded.mu.Unlock()
	if err != nil {
		logging.FromContext(ctx).Error("cannot count a window's buckets of the version before carries: taken as there, so rankings read deeper", "granularity", string(g), "error", fs.Classify(err, "count a window's buckets").Error())
		all, carried = 1, 0
	}
	if carried < all || all == 0 { // an empty bucket says nothing of the roll-ups to come: look again
		if s.upgraded.looked == nil {
			s.upgraded.looked = map[windows.Granularity]look{}
		}
		s.upgraded.looked[g] = look{start, at.Add(holdsOldFor), carried < all}
		return carried < all
	}
	if s.upgraded.since == nil {
		s.upgraded.since = map[windows.Granularity]time.Time{}
	}
	if since, ok := s.upgraded.since[g]; !ok || start.Before(since) {
		s.upgraded.since[g] = start
	}
	return false
}

// oldBound is what a counter beyond rankings (by carry, by peak in the
// bucket before, by count; each read to depth) counts at most when it
// may be a bucket of the version before: its peak before plus its count.
// A counter listed counts as listed, one unlisted as the list's last
// value.
func oldBound(rankings [][]windows.Ranked, depth int, id string) int64 {
	byCarry, byPeak, byCount := rankings[0], rankings[1], rankings[2]
	if v, ok := valueIn(byCarry, id); ok {
		return v
	}
	peak, ok := valueIn(byPeak, id)
	if !ok {
		peak = tail(byPeak, depth)
	}
	count, ok := valueIn(byCount, id)
	if !ok {
		count = tail(byCount, depth)
	}
	return max(tail(byCarry, depth), peak+count)
}

// valueIn is counter id's value in ranking rs, if listed.
func valueIn(rs []windows.Ranked, id string) (int64, bool) {
	for _, r := range rs {
		if r.CounterID == id {
			return r.Count, true
		}
	}
	return 0, false
}

package counterstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// Fresh returns counters ids as read within the last within (a feed's
// staleness bound, FEED_CACHE), in order, each with its own error: from
// this instance's cache when a read of it began that recently (or since
// this call began), the others
// in one batched read, which pay is told the size of first (and may
// refuse: a spent budget). A counter another call is reading already is
// waited for, not read again, so a hot counter costs a read per instance
// per bound however many read it. A counter that does not exist and is of
// no kind, or a deleted one, is NOT_FOUND; one of a kind nobody used yet
// is the counter its first use creates (a zero Version), 0 as of the read
// that found it absent: both are remembered too, so a feed of unused
// posts reads them once a bound.
// err is a batched read's, or pay's: no counter is answered then.
func (s *Store) Fresh(ctx context.Context, ids []string, within time.Duration, pay func(reads int) error) ([]counter.Counter, []error, error) {
	now := s.base.Now()
	fresh := func(id string) (cachedCounter, bool) { // read within the bound, or begun since this call did
		e, ok := s.cached.Get(id)
		return e, ok && within > 0 && now.Sub(e.read) < within
	}
	got := map[string]cachedCounter{}
	waits := map[string]chan struct{}{}
	var mine []string                       // read by this call…
	announced := map[string]chan struct{}{} // …and announced to others: all of them but those another call read for an older bound
	s.loadMu.Lock()
	for _, id := range ids {
		if _, ok := got[id]; ok || waits[id] != nil || slices.Contains(mine, id) {
			continue
		}
		if e, ok := fresh(id); ok {
			got[id] = e
			continue
		}
		if ch, ok := s.loading[id]; ok && within > 0 { // with no bound, a read begun before this call is too old
			waits[id] = ch
			continue
		}
		if _, ok := s.loading[id]; !ok {
			announced[id] = make(chan struct{})
			s.loading[id] = announced[id]
		}
		mine = append(mine, id)
	}
	s.loadMu.Unlock()
	loaded, corrupt, err := s.load(ctx, mine, now, pay)
	s.loadMu.Lock()
	for id, ch := range announced {
		close(ch)
		delete(s.loading, id)
	}
	s.loadMu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(got, loaded)
	// What others read for this call, as they left it in the cache; what
	// they failed to read, or a later write replaced with an older read,
	// this call reads itself.
	var again []string
	for id, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, errs.Retryable(ctx.Err(), time.Second, "the counters' read ended before another request's read of them did; retry")
		}
		if e, ok := fresh(id); ok {
			got[id] = e
		} else {
			again = append(again, id)
		}
	}
	more, corruptMore, err := s.load(ctx, again, s.base.Now(), pay)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(got, more)
	maps.Copy(corrupt, corruptMore)
	out, outErrs := make([]counter.Counter, len(ids)), make([]error, len(ids))
	for i, id := range ids {
		e := got[id]
		switch {
		case corrupt[id] != nil:
			outErrs[i] = corrupt[id]
		case e.absent && e.c.ID == "":
			outErrs[i] = notFound(id)
		default:
			out[i], _, outErrs[i] = s.liveOrNew(ctx, id, func(context.Context, string) (counter.Counter, error) { return e.c, nil })
		}
	}
	return out, outErrs, nil
}

// load reads counters ids in one batched read, paid first, remembers them
// from start, and returns them: a counter of a kind nobody used, or of no
// kind, read absent, as such. It returns the error of each document it
// could not decode (DATA_LOSS), which it does not remember.
func (s *Store) load(ctx context.Context, ids []string, start time.Time, pay func(reads int) error) (map[string]cachedCounter, map[string]error, error) {
	loaded, corrupt := map[string]cachedCounter{}, map[string]error{}
	if len(ids) == 0 {
		return loaded, corrupt, nil
	}
	if err := pay(len(ids)); err != nil {
		return nil, nil, err
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = s.name(dm.Counter(id))
	}
	docs, _, err := s.db.GetAll(ctx, names, time.Time{})
	if err != nil {
		return nil, nil, fs.Classify(err, "read counters")
	}
	for i, pd := range docs {
		id := ids[i]
		if pd == nil {
			absent := cachedCounter{read: start, expires: start, absent: true}
			if kind, ok := s.opts.Kinds.Of(id); ok {
				absent.c = kind.Counter(id)
				absent.c.AsOf = start // 0, as of the read
			}
			s.keep(id, absent)
			loaded[id] = absent
			continue
		}
		c, err := s.decode(pd)
		if err != nil {
			corrupt[id] = err
			continue
		}
		s.Remember(c, start)
		loaded[id] = cachedCounter{c: c, read: start}
	}
	return loaded, corrupt, nil
}

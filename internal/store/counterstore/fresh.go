package counterstore

import (
	"context"
	"slices"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// Fresh returns counters ids as read within the last within (a feed's
// staleness bound, FEED_CACHE), in order, each with its own error: from
// this instance's cache when a read of it began that recently, the others
// in one batched read, which pay is told the size of first (and may
// refuse: a spent budget). A counter another call is reading already is
// waited for, not read again, so a hot counter costs a read per instance
// per bound however many read it. A counter that does not exist and is of
// no kind, or a deleted one, is NOT_FOUND; one of a kind nobody used yet
// is the counter its first use creates (a zero Version): both are
// remembered too, so a feed of unused posts reads them once a bound.
// err is the batched read's, or pay's: no counter is answered then.
func (s *Store) Fresh(ctx context.Context, ids []string, within time.Duration, pay func(reads int) error) ([]counter.Counter, []error, error) {
	now := s.base.Now()
	fresh := func(id string) (cachedCounter, bool) { // read within the bound, or since this call began
		e, ok := s.cached.Get(id)
		return e, ok && (!e.read.Before(now) || now.Sub(e.read) < within)
	}
	var mine []string             // read by this call
	var announced []chan struct{} // of mine, those other calls may wait for
	var waits []chan struct{}     // reads of other calls this one waits for
	s.loadMu.Lock()
	for _, id := range ids {
		if _, ok := fresh(id); ok {
			continue
		}
		ch, ok := s.loading[id]
		switch {
		case ok && within > 0:
			waits = append(waits, ch)
			continue
		case !ok:
			ch = make(chan struct{})
			s.loading[id] = ch
			announced = append(announced, ch)
		} // with no bound, a read begun before this call is too old: read it again
		mine = append(mine, id)
	}
	s.loadMu.Unlock()
	corrupt, err := s.load(ctx, mine, now, pay)
	s.loadMu.Lock()
	for _, ch := range announced {
		close(ch)
	}
	for _, id := range mine {
		if ch, ok := s.loading[id]; ok && slices.Contains(announced, ch) {
			delete(s.loading, id)
		}
	}
	s.loadMu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, errs.Retryable(ctx.Err(), time.Second, "the counters' read ended before another request's read of them did; retry")
		}
	}
	out, outErrs := make([]counter.Counter, len(ids)), make([]error, len(ids))
	for i, id := range ids {
		e, ok := fresh(id)
		switch {
		case corrupt[id] != nil:
			outErrs[i] = corrupt[id]
		case !ok: // another request's read of it failed, or it was forgotten meanwhile
			outErrs[i] = errs.Retryable(nil, time.Second, "counter %q could not be read now; retry", id)
		case e.absent && e.c.ID == "":
			outErrs[i] = notFound(id)
		default:
			out[i], _, outErrs[i] = s.liveOrNew(ctx, id, func(context.Context, string) (counter.Counter, error) { return e.c, nil })
		}
	}
	return out, outErrs, nil
}

// load reads counters ids in one batched read, paid first, and remembers
// them from start: a counter of a kind nobody used, or of no kind, read
// absent, as such. It returns the error of each document it could not
// decode (DATA_LOSS), which it does not remember.
func (s *Store) load(ctx context.Context, ids []string, start time.Time, pay func(reads int) error) (map[string]error, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if err := pay(len(ids)); err != nil {
		return nil, err
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = s.name(dm.Counter(id))
	}
	docs, _, err := s.db.GetAll(ctx, names, time.Time{})
	if err != nil {
		return nil, fs.Classify(err, "read counters")
	}
	corrupt := map[string]error{}
	for i, pd := range docs {
		if pd == nil {
			absent := cachedCounter{read: start, expires: start, absent: true}
			if kind, ok := s.opts.Kinds.Of(ids[i]); ok {
				absent.c = kind.Counter(ids[i])
			}
			s.cached.Add(ids[i], absent)
			continue
		}
		c, err := s.decode(pd)
		if err != nil {
			corrupt[ids[i]] = err
			continue
		}
		s.Remember(c, start)
	}
	return corrupt, nil
}

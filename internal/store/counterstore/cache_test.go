package counterstore

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/sizedlru"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestTheCacheReckonsWhatItHolds fills the counter cache with counters of
// long ids and owners, and checks that what it reckons they take is near
// what the heap grew by: its byte bound (a share of the instance's
// memory) then bounds the memory. Bounded by entries only, 100,000 such
// counters took hundreds of MB.
func TestTheCacheReckonsWhatItHolds(t *testing.T) {
	const n = 20_000
	c := sizedlru.New(n, 1<<40, cachedSize)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	hour := windows.UTC.Start(windows.Hour, time.Now())
	for i := range n {
		id := strings.Repeat("x", 500) + string(rune('a'+i%26)) + strings.Repeat("y", i%100)
		id += strconv.Itoa(i)
		c.Add(id, cachedCounter{c: counter.Counter{ID: id, Owner: strings.Repeat("o", 128) + strconv.Itoa(i), Kind: "likes",
			Peaks: map[windows.Granularity]windows.Peak{windows.Hour: {Start: hour}, windows.Day: {Start: hour}}}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int(after.HeapAlloc - before.HeapAlloc)
	t.Logf("%d counters: reckoned %d KiB, the heap grew %d KiB", n, c.Bytes()>>10, grew>>10)
	if c.Bytes() < grew*2/3 || c.Bytes() > grew*2 {
		t.Errorf("the cache reckons %d bytes for what took %d", c.Bytes(), grew)
	}
}

// TestALateReadDoesNotPutBackWhatACommitReplaced: a page's read of a
// counter, begun before this instance deleted it and answered after,
// left the counter live in the cache over the deletion's tombstone, so
// the instance that deleted it answered it for a while yet. An entry is
// replaced by a newer version of the document only, or, where either was
// read absent, by a read begun later.
func TestALateReadDoesNotPutBackWhatACommitReplaced(t *testing.T) {
	s := New(&shared.Base{}, Options{ShardCountCache: 5 * time.Second, Calendar: windows.UTC})
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	live := counter.Counter{ID: "x", Version: at(0)}
	gone := counter.Counter{ID: "x", Version: at(20), Deleted: counter.Deletion{At: at(10)}}
	s.Remember(gone, at(10))                                              // the deletion's commit, sent at 10 ms
	s.Remember(live, at(5))                                               // a read begun at 5 ms, answered after it
	s.keep("x", cachedCounter{read: at(7), expires: at(7), absent: true}) // a read of nothing, begun before the commit
	if e, _ := s.cached.Get("x"); !e.c.Version.Equal(gone.Version) {
		t.Errorf("the cache holds version %v (absent: %v), want the tombstone's", e.c.Version, e.absent)
	}
	s.keep("x", cachedCounter{read: at(500), expires: at(500), absent: true}) // dropped since, read later
	if e, _ := s.cached.Get("x"); !e.absent {
		t.Errorf("the cache holds version %v, want the later read of nothing", e.c.Version)
	}
	s.Remember(live, at(400)) // a read begun before that one, answered after
	if e, _ := s.cached.Get("x"); !e.absent {
		t.Errorf("the cache holds version %v, want the later read of nothing", e.c.Version)
	}
	again := counter.Counter{ID: "x", Version: at(900)} // created again elsewhere, read later
	s.Remember(again, at(950))
	if e, _ := s.cached.Get("x"); !e.c.Version.Equal(again.Version) {
		t.Errorf("the cache holds version %v, want the counter created again", e.c.Version)
	}
}

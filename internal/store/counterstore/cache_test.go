package counterstore

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/sizedlru"
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

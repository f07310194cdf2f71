// Package sizedlru is a least-recently-used cache bounded in bytes as well
// as in entries, its byte bound a share of the instance's memory. A cache
// bounded by entries alone holds whatever its entries weigh: 100,000
// counters with long ids and owners are a few hundred MB, past what a
// 512 MiB function instance has. golang-lru bounds entries only; this
// wraps its simplelru with a size of each entry, as the caller reckons it.
package sizedlru

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[K, V]
	size  func(K, V) int
	bytes int // of the entries held
	max   int
}

// New returns a cache of at most maxEntries entries and maxBytes bytes, as
// size reckons each entry (its key, its value and their overhead).
func New[K comparable, V any](maxEntries, maxBytes int, size func(K, V) int) *Cache[K, V] {
	c := &Cache[K, V]{size: size, max: maxBytes}
	c.lru, _ = simplelru.NewLRU(maxEntries, func(k K, v V) { c.bytes -= size(k, v) }) // maxEntries > 0: no error
	return c
}

// Add adds or replaces an entry, then forgets the least recently used
// ones until the cache is within its bounds again.
func (c *Cache[K, V]) Add(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k) // its size leaves with it
	c.lru.Add(k, v)
	c.bytes += c.size(k, v)
	for c.bytes > c.max && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// Get returns an entry and marks it used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

// Peek returns an entry without marking it used.
func (c *Cache[K, V]) Peek(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Peek(k)
}

// Contains reports whether k is held, without marking it used.
func (c *Cache[K, V]) Contains(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Contains(k)
}

// Remove forgets k.
func (c *Cache[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
}

// Len is the number of entries; Bytes their size.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *Cache[K, V]) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Entry is the overhead of an entry beyond its key's and value's own
// bytes: the map slot, the list element, their pointers.
const Entry = 128

// String is the size of a string's header and bytes.
func String(s string) int { return 16 + len(s) }

// Share returns fraction of the instance's memory, in bytes.
func Share(fraction float64) int { return int(fraction * float64(InstanceMemory())) }

// DefaultMemory is what an instance is taken to have when nothing says:
// a Cloud Functions instance's default.
const DefaultMemory = 256 << 20

// InstanceMemory is the memory this process may use: the least of its
// memory limit (GOMEMLIMIT), its cgroup's limit, and the machine's memory
// (what /proc/meminfo says, which a Cloud Run or Cloud Functions sandbox
// reports as the instance's); DefaultMemory when none says.
var InstanceMemory = sync.OnceValue(func() int64 {
	least := int64(math.MaxInt64)
	for _, n := range []int64{debug.SetMemoryLimit(-1), fileBytes("/sys/fs/cgroup/memory.max"),
		fileBytes("/sys/fs/cgroup/memory/memory.limit_in_bytes"), memTotal()} {
		if n > 0 && n < least {
			least = n
		}
	}
	if least >= 1<<50 { // unlimited
		return DefaultMemory
	}
	return least
})

// fileBytes reads a number of bytes from a file (0 when it holds none).
func fileBytes(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// memTotal is /proc/meminfo's MemTotal in bytes (0 when unknown).
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

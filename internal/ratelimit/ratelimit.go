// Package ratelimit keeps one token bucket per key (a user id), so that one
// client cannot flood a counter.
//
// Buckets live in the memory of one function instance: with N instances a
// user can get up to N times the rate. That bounds abuse at no cost per
// request; a global limit would need a Firestore write per request.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Limiter hands out tokens at Rate per second per key, up to Burst saved.
type Limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxKeys bounds memory: past it, buckets that refilled completely (they
// would behave as new ones) are dropped.
const maxKeys = 100_000

// New returns a limiter; rate 0 allows everything.
func New(rate float64, burst int) *Limiter {
	return &Limiter{rate: rate, burst: float64(burst), now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes a token for key. When none is left it returns false and how
// long until one is.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	if l == nil || l.rate == 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxKeys {
			l.dropFull(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

func (l *Limiter) dropFull(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

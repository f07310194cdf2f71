package ratelimit

import (
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(2, 3) // 2 per second, bursts of 3
	l.now = func() time.Time { return now }

	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th request: ok=%v wait=%v, want refused for 500ms", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refused after the wait it announced")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("a second token appeared from nowhere")
	}
	now = now.Add(time.Hour)
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("after an hour, request %d refused: the bucket should hold 3", i)
		}
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("the bucket saved more than its burst")
	}
}

func TestZeroRateAllowsAll(t *testing.T) {
	l := New(0, 1)
	for range 1000 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatal("rate 0 refused a request")
		}
	}
}

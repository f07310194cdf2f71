package ratelimit

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func fixedClock(l *Limiter, at *time.Time) { l.now = func() time.Time { return *at } }

func TestTakeRefillsAtTheRate(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(map[Budget]Limit{Increment: {Rate: 2, Burst: 3}})
	fixedClock(l, &now)
	for i := range 3 {
		if ok, _ := l.Take("u", Increment, 1); !ok {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	ok, wait := l.Take("u", Increment, 1)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th token: ok=%v wait=%s, want refused with 500ms", ok, wait)
	}
	if ok, _ := l.Take("v", Increment, 1); !ok {
		t.Error("another user shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Take("u", Increment, 1); !ok {
		t.Error("no token after the refill time")
	}
}

func TestTakeIsAllOrNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(map[Budget]Limit{Record: {Rate: 10, Burst: 5}})
	fixedClock(l, &now)
	if ok, _ := l.Take("u", Record, 4); !ok {
		t.Fatal("4 of 5 refused")
	}
	if ok, wait := l.Take("u", Record, 3); ok || wait != 200*time.Millisecond {
		t.Fatalf("3 with 1 left: ok=%v wait=%s", ok, wait)
	}
	if got := l.Available("u", Record, 100); got != 1 {
		t.Errorf("a refused take consumed tokens: %d left, want 1", got)
	}
	if ok, _ := l.Take("u", Record, 6); ok {
		t.Error("more than the burst was allowed")
	}
}

func TestBudgetsAreSeparate(t *testing.T) {
	l := New(map[Budget]Limit{Create: {Rate: 1, Burst: 1}, Strong: {Rate: 1, Burst: 1}})
	if ok, _ := l.Take("u", Create, 1); !ok {
		t.Fatal("create refused")
	}
	if ok, _ := l.Take("u", Strong, 1); !ok {
		t.Error("the strong-read budget was spent by a create")
	}
}

func TestUnlimited(t *testing.T) {
	var nilLimiter *Limiter
	l := New(map[Budget]Limit{Increment: {Rate: 0, Burst: 1}})
	for range 1000 {
		if ok, _ := l.Take("u", Increment, 1); !ok {
			t.Fatal("rate 0 limited")
		}
		if ok, _ := l.Take("", Query, 1); !ok {
			t.Fatal("an anonymous caller (AUTH=off) was limited")
		}
		if ok, _ := nilLimiter.Take("u", Increment, 1); !ok {
			t.Fatal("a nil limiter limited")
		}
	}
}

// TestMemoryIsBounded checks that a flood of users keeps at most MaxUsers,
// without a scan: the old table scanned every bucket under its lock.
func TestMemoryIsBounded(t *testing.T) {
	l := New(Defaults)
	start := time.Now()
	for i := range MaxUsers + 5000 {
		l.Take(fmt.Sprint("user-", i), Increment, 1)
	}
	if n := l.users.Len(); n != MaxUsers {
		t.Errorf("%d users remembered, want %d", n, MaxUsers)
	}
	if _, ok := l.users.Get("user-0"); ok {
		t.Error("the least recently seen user was kept")
	}
	t.Logf("%d users in %s", MaxUsers+5000, time.Since(start))
}

func TestParse(t *testing.T) {
	got, err := Parse(" increment=50:100, create=0:1")
	if err != nil {
		t.Fatal(err)
	}
	if got[Increment] != (Limit{50, 100}) || got[Create] != (Limit{0, 1}) || got[Query] != Defaults[Query] {
		t.Errorf("Parse = %v", got)
	}
	if d, err := Parse(DefaultsString()); err != nil || fmt.Sprint(d) != fmt.Sprint(Defaults) {
		t.Errorf("DefaultsString does not parse back: %v %v", d, err)
	}
	for _, bad := range []string{"increments=1:1", "increment=1", "increment=-1:1", "increment=1:0", "increment=x:1", "=1:1"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "budget") && !strings.Contains(err.Error(), "rate") {
			t.Errorf("Parse(%q) err = %v", bad, err)
		}
	}
}

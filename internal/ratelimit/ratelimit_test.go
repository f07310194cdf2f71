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
		if ok, _ := l.Take(Increment, 1, "u"); !ok {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	ok, wait := l.Take(Increment, 1, "u")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th token: ok=%v wait=%s, want refused with 500ms", ok, wait)
	}
	if ok, _ := l.Take(Increment, 1, "v"); !ok {
		t.Error("another user shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Take(Increment, 1, "u"); !ok {
		t.Error("no token after the refill time")
	}
}

func TestTakeIsAllOrNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(map[Budget]Limit{Record: {Rate: 10, Burst: 5}})
	fixedClock(l, &now)
	if ok, _ := l.Take(Record, 4, "u"); !ok {
		t.Fatal("4 of 5 refused")
	}
	if ok, wait := l.Take(Record, 3, "u"); ok || wait != 200*time.Millisecond {
		t.Fatalf("3 with 1 left: ok=%v wait=%s", ok, wait)
	}
	if got := l.Available(Record, 100, "u"); got != 1 {
		t.Errorf("a refused take consumed tokens: %d left, want 1", got)
	}
	if ok, _ := l.Take(Record, 6, "u"); ok {
		t.Error("more than the burst was allowed")
	}
}

func TestBudgetsAreSeparate(t *testing.T) {
	l := New(map[Budget]Limit{Create: {Rate: 1, Burst: 1}, Strong: {Rate: 1, Burst: 1}})
	if ok, _ := l.Take(Create, 1, "u"); !ok {
		t.Fatal("create refused")
	}
	if ok, _ := l.Take(Strong, 1, "u"); !ok {
		t.Error("the strong-read budget was spent by a create")
	}
}

func TestUnlimited(t *testing.T) {
	var nilLimiter *Limiter
	l := New(map[Budget]Limit{Increment: {Rate: 0, Burst: 1}})
	for range 1000 {
		if ok, _ := l.Take(Increment, 1, "u"); !ok {
			t.Fatal("rate 0 limited")
		}
		if ok, _ := l.Take(Query, 1, ""); !ok {
			t.Fatal("an anonymous caller (AUTH=off) was limited")
		}
		if ok, _ := nilLimiter.Take(Increment, 1, "u"); !ok {
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
		l.Take(Increment, 1, fmt.Sprint("user-", i))
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

// TestEveryKeyMustHaveTheTokens: a user's budget and its address's are
// both spent, all or nothing, so new uids from one address get no new
// budget.
func TestEveryKeyMustHaveTheTokens(t *testing.T) {
	l := New(map[Budget]Limit{Increment: {Rate: 1, Burst: 2}})
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for _, user := range []string{"u:a", "u:b"} {
		if ok, _ := l.Take(Increment, 1, user, "a:1.2.3.4"); !ok {
			t.Fatalf("%s: refused while the address has budget", user)
		}
	}
	if ok, wait := l.Take(Increment, 1, "u:c", "a:1.2.3.4"); ok || wait <= 0 {
		t.Fatalf("a third new user from the same address: %v %v, want refused", ok, wait)
	}
	// The refusal took nothing from the new user's bucket.
	if got := l.Available(Increment, 10, "u:c"); got != 2 {
		t.Fatalf("u:c has %d tokens after a refusal, want 2", got)
	}
	if ok, _ := l.Take(Increment, 1, "u:c", "a:5.6.7.8"); !ok {
		t.Fatal("u:c from another address: refused")
	}
}

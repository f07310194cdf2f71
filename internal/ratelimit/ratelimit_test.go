package ratelimit

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func fixedClock(l *Limiter, at *time.Time) { l.now = func() time.Time { return *at } }

func TestTakeRefillsAtTheRate(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Limits{Increment: {Rate: 2, Burst: 3}}, nil, nil)
	fixedClock(l, &now)
	for i := range 3 {
		if ok, _ := l.Take(Increment, 1, User("u")); !ok {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	ok, wait := l.Take(Increment, 1, User("u"))
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th token: ok=%v wait=%s, want refused with 500ms", ok, wait)
	}
	if ok, _ := l.Take(Increment, 1, User("v")); !ok {
		t.Error("another user shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Take(Increment, 1, User("u")); !ok {
		t.Error("no token after the refill time")
	}
}

func TestTakeIsAllOrNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Limits{Record: {Rate: 10, Burst: 5}}, nil, nil)
	fixedClock(l, &now)
	if ok, _ := l.Take(Record, 4, User("u")); !ok {
		t.Fatal("4 of 5 refused")
	}
	if ok, wait := l.Take(Record, 3, User("u")); ok || wait != 200*time.Millisecond {
		t.Fatalf("3 with 1 left: ok=%v wait=%s", ok, wait)
	}
	if got := l.Available(Record, 100, User("u")); got != 1 {
		t.Errorf("a refused take consumed tokens: %d left, want 1", got)
	}
	if ok, _ := l.Take(Record, 6, User("u")); ok {
		t.Error("more than the burst was allowed")
	}
}

func TestBudgetsAreSeparate(t *testing.T) {
	l := New(Limits{Create: {Rate: 1, Burst: 1}, Strong: {Rate: 1, Burst: 1}}, nil, nil)
	if ok, _ := l.Take(Create, 1, User("u")); !ok {
		t.Fatal("create refused")
	}
	if ok, _ := l.Take(Strong, 1, User("u")); !ok {
		t.Error("the strong-read budget was spent by a create")
	}
}

func TestUnlimited(t *testing.T) {
	var nilLimiter *Limiter
	l := New(Limits{Increment: {Rate: 0, Burst: 1}}, nil, nil)
	for range 1000 {
		if ok, _ := l.Take(Increment, 1, User("u")); !ok {
			t.Fatal("rate 0 limited")
		}
		if ok, _ := l.Take(Query, 1, User("")); !ok {
			t.Fatal("an anonymous caller (AUTH=off) was limited")
		}
		if ok, _ := nilLimiter.Take(Increment, 1, User("u")); !ok {
			t.Fatal("a nil limiter limited")
		}
	}
}

// TestMemoryIsBounded checks that a flood of users keeps at most MaxKeys,
// without a scan: the old table scanned every bucket under its lock.
func TestMemoryIsBounded(t *testing.T) {
	l := New(UserDefaults, AddressDefaults, nil)
	start := time.Now()
	for i := range MaxKeys + 5000 {
		l.Take(Increment, 1, User(fmt.Sprint("user-", i)))
	}
	if n := l.keys.Len(); n != MaxKeys {
		t.Errorf("%d keys remembered, want %d", n, MaxKeys)
	}
	if _, ok := l.keys.Get(User("user-0").String()); ok {
		t.Error("the least recently seen user was kept")
	}
	t.Logf("%d users in %s", MaxKeys+5000, time.Since(start))
}

func TestParse(t *testing.T) {
	got, err := Parse(" increment=50:100, create=0:1", UserDefaults)
	if err != nil {
		t.Fatal(err)
	}
	if got[Increment] != (Limit{50, 100}) || got[Create] != (Limit{0, 1}) || got[Query] != UserDefaults[Query] {
		t.Errorf("Parse = %v", got)
	}
	if d, err := Parse(UserDefaults.String(), UserDefaults); err != nil || fmt.Sprint(d) != fmt.Sprint(UserDefaults) {
		t.Errorf("DefaultsString does not parse back: %v %v", d, err)
	}
	for _, bad := range []string{"increments=1:1", "increment=1", "increment=-1:1", "increment=1:0", "increment=x:1", "=1:1"} {
		if _, err := Parse(bad, UserDefaults); err == nil || !strings.Contains(err.Error(), "budget") && !strings.Contains(err.Error(), "rate") {
			t.Errorf("Parse(%q) err = %v", bad, err)
		}
	}
}

// TestEveryKeyMustHaveTheTokens: a user's budget and its address's are
// both spent, all or nothing, so new uids from one address get no new
// budget.
func TestEveryKeyMustHaveTheTokens(t *testing.T) {
	l := New(Limits{Increment: {Rate: 1, Burst: 2}}, Limits{Increment: {Rate: 1, Burst: 2}}, nil)
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for _, user := range []string{"a", "b"} {
		if ok, _ := l.Take(Increment, 1, Keys(user, "1.2.3.4", "")...); !ok {
			t.Fatalf("%s: refused while the address has budget", user)
		}
	}
	if ok, wait := l.Take(Increment, 1, Keys("c", "1.2.3.4", "")...); ok || wait <= 0 {
		t.Fatalf("a third new user from the same address: %v %v, want refused", ok, wait)
	}
	// The refusal took nothing from the new user's bucket.
	if got := l.Available(Increment, 10, User("c")); got != 2 {
		t.Fatalf("u:c has %d tokens after a refusal, want 2", got)
	}
	if ok, _ := l.Take(Increment, 1, Keys("c", "5.6.7.8", "")...); !ok {
		t.Fatal("u:c from another address: refused")
	}
}

// TestAddressesHaveLimitsOfTheirOwn: a NAT of many users has an address's
// limits, not a user's; IPv6 counts by /64, so a client hopping within its
// block (and minting anonymous uids) brings no fresh budget.
func TestAddressesHaveLimitsOfTheirOwn(t *testing.T) {
	l := New(Limits{Increment: {Rate: 1, Burst: 2}}, Limits{Increment: {Rate: 1, Burst: 20}}, nil)
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for i := range 20 {
		if ok, _ := l.Take(Increment, 1, Keys(fmt.Sprint("nat-user-", i%10), "203.0.113.9", "")...); !ok {
			t.Fatalf("take %d of 10 users behind one address refused under the address's burst", i)
		}
	}
	if ok, _ := l.Take(Increment, 1, Keys("nat-user-11", "203.0.113.9", "")...); ok {
		t.Fatal("the address's burst of 20 was passed")
	}
	l = New(Limits{Increment: {Rate: 1, Burst: 2}}, Limits{Increment: {Rate: 1, Burst: 2}}, nil)
	l.now = func() time.Time { return now }
	for i := range 3 {
		addr := fmt.Sprintf("2001:db8:1:2::%x", i+1)
		ok, _ := l.Take(Increment, 1, Keys(fmt.Sprint("v6-user-", i), addr, "")...)
		if keys := Addresses(addr); keys[0] != (Key{PerAddress, "2001:db8:1:2::/64"}) {
			t.Fatalf("Addresses = %v, want its /64 first", keys)
		}
		if i < 2 && !ok {
			t.Fatalf("v6 take %d refused", i)
		}
		if i == 2 && ok {
			t.Fatal("a third address of the same /64 got a fresh budget")
		}
	}
}

// TestAddressesOfOneSiteShareASubnet: a provider may hand a site a /56 or
// a /48 (256 or 65,536 /64s); an attacker hopping across them meets the
// budgets of the /56 and the /48. A 6to4 or Teredo address is its IPv4
// address: one IPv4 address has a whole 6to4 /48.
func TestAddressesOfOneSiteShareASubnet(t *testing.T) {
	for addr, want := range map[string][]Key{
		"2001:db8:1:2::9":                      {{PerAddress, "2001:db8:1:2::/64"}, {PerSubnet, "2001:db8:1::/56"}, {PerSubnet, "2001:db8:1::/48"}},
		"203.0.113.9":                          {{PerAddress, "203.0.113.9"}},
		"::ffff:203.0.113.9":                   {{PerAddress, "203.0.113.9"}},
		"2002:cb00:7109:5::1":                  {{PerAddress, "203.0.113.9"}}, // 6to4
		"2001:0:4136:e378:8000:63bf:34ff:8ef6": {{PerAddress, "203.0.113.9"}}, // Teredo: the client inverted
		"not an address":                       {{PerAddress, "not an address"}},
	} {
		if got := Addresses(addr); !slices.Equal(got, want) {
			t.Errorf("Addresses(%q) = %v, want %v", addr, got, want)
		}
	}

	user, address := Limits{Increment: {Rate: 0.001, Burst: 20}}, Limits{Increment: {Rate: 0.001, Burst: 200}}
	l := New(user, address, Scaled(address, SubnetScale))
	fixedClock(l, new(time.Unix(0, 0)))
	landed := 0
	for i := range 120 { // a batch of 20 from each of 120 /64s of one /48, each in a /56 of its own
		if ok, _ := l.Take(Increment, 20, Keys(fmt.Sprint("bot-", i), fmt.Sprintf("2001:db8:7:%x00::1", i), "")...); ok {
			landed += 20
		}
	}
	if landed != 400 {
		t.Errorf("120 /64s of one /48 landed %d of 2,400 items, want the /48's burst of 400", landed)
	}
	for i := range 20 { // the NAT case: 20 users behind one IPv4 address
		if ok, _ := l.Take(Increment, 10, Keys(fmt.Sprint("nat-", i), "198.51.100.7", "")...); !ok {
			t.Fatalf("user %d of 20 behind one address refused", i)
		}
	}
}

func TestARefusedTakeRemembersNoNewKey(t *testing.T) {
	// A user with a spent budget, calling from a thousand fresh addresses:
	// each address's bucket was remembered though the call was refused,
	// so enough of them pushed the user's spent bucket out of memory, and
	// it came back full.
	now := time.Unix(1000, 0)
	l := New(Limits{Increment: {Rate: 0.001, Burst: 1}}, Limits{Increment: {Rate: 10, Burst: 10}}, nil)
	fixedClock(l, &now)
	if ok, _ := l.Take(Increment, 1, Keys("u", "192.0.2.1", "")...); !ok {
		t.Fatal("the first call refused")
	}
	for i := range 1000 {
		if ok, _ := l.Take(Increment, 1, Keys("u", fmt.Sprintf("10.0.%d.%d", i/256, i%256), "")...); ok {
			t.Fatalf("call %d of a spent user allowed", i)
		}
		l.Available(Increment, 1, Keys("w", fmt.Sprintf("10.1.%d.%d", i/256, i%256), "")...)
	}
	if n := l.keys.Len(); n != 2 {
		t.Errorf("%d keys remembered after refusals and availability checks, want 2 (the user and its first address)", n)
	}
}

// Package ratelimit holds budgets: one token bucket (golang.org/x/time/rate)
// per key (a user, a client address) and budget, kept in a bounded LRU so a
// flood of distinct keys cannot grow memory without bound. A request
// spends from several keys at once, all or nothing, so a fresh anonymous
// uid from the same address brings no fresh budget.
//
// Users, addresses, subnets and App Check tokens have limits of their own
// (RATE_LIMITS, ADDRESS_RATE_LIMITS, SUBNET_RATE_LIMITS; a token has a
// user's): many users may share an address (a NAT, a campus), so an
// address gets more than a user. IPv6 addresses count by their /64, the
// block one subscriber gets, so hopping within it brings no fresh budget;
// its /56 and /48, what a provider may hand one site, share budgets of
// their own, so hopping across a thousand /64s does not either. A 6to4 or
// Teredo address counts as the IPv4 address inside it.
//
// Buckets live in the memory of one function instance: with N instances a
// user can get up to N times the rate. That bounds abuse at no cost per
// request; a global limit would need a Firestore write per request.
package ratelimit

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/time/rate"

	"github.com/shardcount/shardcount/internal/sizedlru"
)

// Budget names one kind of work a caller is limited in.
type Budget string

const (
	Call      Budget = "call"      // each call of a public function, before its body is read
	Create    Budget = "create"    // createCounter
	Increment Budget = "increment" // each increment, also each item of a batch
	Read      Budget = "read"      // getCounter (the roll-up: a read or two)
	Strong    Budget = "strong"    // getCounter?consistency=strong (a SUM over the shards)
	Feed      Budget = "feed"      // getCounters: a token per 20 documents a page may read
	Record    Budget = "record"    // each instrument written
	Query     Budget = "query"     // queryInstruments
	Reshard   Budget = "reshard"   // reshardCounter
	Delete    Budget = "delete"    // deleteCounter
	Reset     Budget = "reset"     // resetCounter
	List      Budget = "list"      // listCounters, listMembers
	History   Budget = "history"   // getCounter?history=… (a read per bucket that exists)
	Top       Budget = "top"       // topCounters
)

// Limit is a sustained rate per second and a burst; Rate 0 is unlimited.
type Limit struct {
	Rate  float64
	Burst int
}

func (l Limit) String() string {
	return strconv.FormatFloat(l.Rate, 'f', -1, 64) + ":" + strconv.Itoa(l.Burst)
}

// Limits are the limits of each budget.
type Limits map[Budget]Limit

// Budgets lists the budgets in a stable order, for documentation.
var Budgets = []Budget{Call, Create, Increment, Read, Strong, Feed, History, Top, List, Reshard, Delete, Reset, Record, Query}

// UserDefaults are each user's limits unless RATE_LIMITS overrides them.
var UserDefaults = Limits{
	Call:      {Rate: 20, Burst: 40},
	Create:    {Rate: 1, Burst: 10},
	Increment: {Rate: 10, Burst: 20},
	Read:      {Rate: 20, Burst: 50},
	Strong:    {Rate: 5, Burst: 20},
	Feed:      {Rate: 5, Burst: 40},
	Record:    {Rate: 100, Burst: 500},
	Query:     {Rate: 10, Burst: 30},
	Reshard:   {Rate: 0.1, Burst: 3},
	Delete:    {Rate: 0.1, Burst: 5},
	Reset:     {Rate: 0.1, Burst: 5},
	List:      {Rate: 2, Burst: 10},
	History:   {Rate: 2, Burst: 10},
	Top:       {Rate: 2, Burst: 10},
}

// AddressDefaults are each address's limits unless ADDRESS_RATE_LIMITS
// overrides them: ten times a user's, room for about ten users at their
// peak behind one NAT.
var AddressDefaults = scaled(UserDefaults, 10)

// SubnetScale is how much more than an address a subnet (an IPv6 /56 or
// /48) gets unless SUBNET_RATE_LIMITS says otherwise: a few busy /64s of
// one site, not a thousand.
const SubnetScale = 2

// Scaled returns every limit of l times k.
func Scaled(l Limits, k float64) Limits { return scaled(l, k) }

func scaled(l Limits, k float64) Limits {
	out := Limits{}
	for b, v := range l {
		out[b] = Limit{Rate: v.Rate * k, Burst: int(float64(v.Burst) * k)}
	}
	return out
}

// Parse reads "budget=rate:burst,…" over defaults, e.g.
// "increment=50:100,create=0:1" (rate 0: unlimited).
func Parse(s string, defaults Limits) (Limits, error) {
	out := make(Limits, len(defaults))
	for b, l := range defaults {
		out[b] = l
	}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, spec, ok := strings.Cut(item, "=")
		if _, known := defaults[Budget(name)]; !ok || !known {
			return nil, fmt.Errorf("%q is not budget=rate:burst with a budget among %v", item, Budgets)
		}
		r, b, ok := strings.Cut(spec, ":")
		rt, err1 := strconv.ParseFloat(r, 64)
		burst, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || rt < 0 || burst < 1 {
			return nil, fmt.Errorf("%q: want rate:burst with a rate >= 0 per second and a burst >= 1", item)
		}
		out[Budget(name)] = Limit{Rate: rt, Burst: burst}
	}
	return out, nil
}

// String renders limits in Parse's syntax.
func (l Limits) String() string {
	var parts []string
	for _, b := range Budgets {
		parts = append(parts, string(b)+"="+l[b].String())
	}
	return strings.Join(parts, ",")
}

// Scope says whose limits a key has.
type Scope int

const (
	PerUser     Scope = iota
	PerAddress        // an IPv4 address or an IPv6 /64
	PerSubnet         // an IPv6 /56 or /48
	PerAppToken       // an App Check token: a user's limits
	scopes
)

// Key is what a bucket belongs to: a user, a client address or subnet, an
// App Check token.
type Key struct {
	Scope Scope
	ID    string
}

// User is the key of a Firebase uid; "" (no caller) has no budget.
func User(uid string) Key { return Key{PerUser, uid} }

// Keys are the keys a caller spends from, all at once: its user's, its
// address's and subnets', and its App Check token's (a digest of it).
func Keys(uid, addr, appToken string) []Key {
	return append([]Key{User(uid), AppToken(appToken)}, Addresses(addr)...)
}

// AppToken is the key of an App Check token, by a digest of it; "" (none
// verified) has no budget.
func AppToken(digest string) Key { return Key{PerAppToken, digest} }

// Addresses are the keys of a client address: an IPv4 address (also one
// mapped into IPv6, or inside a 6to4 or Teredo address) by itself; an
// IPv6 address by its /64, its /56 and its /48.
func Addresses(addr string) []Key {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return []Key{{PerAddress, addr}}
	}
	if v4, ok := embeddedIPv4(a.Unmap()); ok {
		return []Key{{PerAddress, v4.String()}}
	}
	prefix := func(bits int) string {
		p, _ := a.Prefix(bits) // bits <= 128 never fails
		return p.String()
	}
	return []Key{{PerAddress, prefix(64)}, {PerSubnet, prefix(56)}, {PerSubnet, prefix(48)}}
}

// embeddedIPv4 is the IPv4 address a is, or carries as a tunnel's client:
// 6to4 (2002:AABB:CCDD::/48, RFC 3056) and Teredo (2001::/32, the client
// inverted in the last 32 bits, RFC 4380). Each IPv4 address has a whole
// 6to4 /48, so counting it by its /64s would hand it 65,536 budgets.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4() {
		return a, true
	}
	b := a.As16()
	switch {
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

func (k Key) String() string {
	return [...]string{"user:", "addr:", "net:", "app:"}[k.Scope] + k.ID
}

// MaxKeys bounds the keys remembered per Limiter, and keysShare the
// memory they take (a 16th of the instance's); the least recently seen
// are forgotten first, which resets their buckets to full.
const (
	MaxKeys   = 100_000
	keysShare = 1.0 / 16
)

// keySize is what a key's buckets take.
func keySize(key string, buckets map[Budget]*rate.Limiter) int {
	return sizedlru.Entry + sizedlru.String(key) + 48 + len(buckets)*(int(unsafe.Sizeof(rate.Limiter{}))+32)
}

// Limiter applies the budgets to keys.
type Limiter struct {
	limits [scopes]Limits
	now    func() time.Time

	mu   sync.Mutex // makes a Take atomic over its keys
	keys *sizedlru.Cache[string, map[Budget]*rate.Limiter]
}

// New returns a limiter with the given limits of users, addresses and
// subnets (Parse's results); an App Check token has a user's.
func New(users, addresses, subnets Limits) *Limiter {
	keys := sizedlru.New(MaxKeys, sizedlru.Share(keysShare), keySize)
	return &Limiter{limits: [scopes]Limits{users, addresses, subnets, users}, now: time.Now, keys: keys}
}

// Take takes n tokens of budget b from the bucket of each key (a user's
// and an address's, say), all or nothing. When they are not all there it
// returns false and how long until the first key that refused has them.
// A nil Limiter, an empty key and an unlimited budget always allow.
//
// A refused request remembers no new key: otherwise requests from fresh
// addresses, each refused for its user, would fill the memory and push
// out buckets that are spent (their own user's too), which come back
// full.
func (l *Limiter) Take(b Budget, n int, keys ...Key) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var taken []*rate.Reservation
	refuse := func(wait time.Duration) (bool, time.Duration) {
		for _, r := range taken {
			r.CancelAt(now)
		}
		return false, wait
	}
	fresh := map[string]map[Budget]*rate.Limiter{}
	for _, key := range keys {
		limit, ok := l.limit(key, b)
		if !ok {
			continue
		}
		buckets, known := l.keys.Get(key.String())
		if !known {
			buckets = map[Budget]*rate.Limiter{}
			fresh[key.String()] = buckets
		}
		lim := buckets[b]
		if lim == nil {
			lim = rate.NewLimiter(rate.Limit(limit.Rate), limit.Burst)
			buckets[b] = lim
			if known {
				l.keys.Add(key.String(), buckets) // it grew
			}
		}
		if n > lim.Burst() {
			return refuse(time.Duration(float64(n) / float64(lim.Limit()) * float64(time.Second)))
		}
		r := lim.ReserveN(now, n)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			return refuse(d)
		}
		taken = append(taken, r)
	}
	for k, buckets := range fresh {
		l.keys.Add(k, buckets)
	}
	return true, 0
}

// Available returns how many tokens of budget b every key's bucket could
// give now, up to max (max when unlimited). It remembers no key.
func (l *Limiter) Available(b Budget, max int, keys ...Key) int {
	if l == nil {
		return max
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, key := range keys {
		limit, ok := l.limit(key, b)
		if !ok {
			continue
		}
		tokens := limit.Burst // a key not seen yet has a full bucket
		if buckets, known := l.keys.Peek(key.String()); known && buckets[b] != nil {
			tokens = int(buckets[b].TokensAt(l.now()))
		}
		max = min(max, tokens)
	}
	return max
}

// Burst is the most tokens of budget b one Take may ask of every key
// (math.MaxInt when none is limited): more is refused whatever the wait.
func (l *Limiter) Burst(b Budget, keys ...Key) int {
	most := math.MaxInt
	if l == nil {
		return most
	}
	for _, key := range keys {
		if limit, ok := l.limit(key, b); ok {
			most = min(most, limit.Burst)
		}
	}
	return most
}

// limit is key's limit of budget b; false when it has none.
func (l *Limiter) limit(key Key, b Budget) (Limit, bool) {
	if key.ID == "" {
		return Limit{}, false
	}
	limit := l.limits[key.Scope][b]
	return limit, limit.Rate != 0
}

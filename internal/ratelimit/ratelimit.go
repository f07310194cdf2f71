// Package ratelimit holds budgets: one token bucket (golang.org/x/time/rate)
// per key (a user, a client address) and budget, kept in a bounded LRU so a
// flood of distinct keys cannot grow memory without bound. A request
// spends from several keys at once, all or nothing, so a fresh anonymous
// uid from the same address brings no fresh budget.
//
// Buckets live in the memory of one function instance: with N instances a
// user can get up to N times the rate. That bounds abuse at no cost per
// request; a global limit would need a Firestore write per request.
package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Budget names one kind of work a user is limited in.
type Budget string

const (
	Create    Budget = "create"    // createCounter
	Increment Budget = "increment" // each increment, also each item of a batch
	Strong    Budget = "strong"    // getCounter?consistency=strong (a SUM over the shards)
	Record    Budget = "record"    // each instrument written
	Query     Budget = "query"     // queryInstruments
	Reshard   Budget = "reshard"   // reshardCounter
	Delete    Budget = "delete"    // deleteCounter
	Reset     Budget = "reset"     // resetCounter
	List      Budget = "list"      // listCounters
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

// Defaults are the limits of each budget unless RATE_LIMITS overrides them.
var Defaults = map[Budget]Limit{
	Create:    {Rate: 1, Burst: 10},
	Increment: {Rate: 10, Burst: 20},
	Strong:    {Rate: 5, Burst: 20},
	Record:    {Rate: 100, Burst: 500},
	Query:     {Rate: 10, Burst: 30},
	Reshard:   {Rate: 0.1, Burst: 3},
	Delete:    {Rate: 0.1, Burst: 5},
	Reset:     {Rate: 0.1, Burst: 5},
	List:      {Rate: 2, Burst: 10},
	History:   {Rate: 2, Burst: 10},
	Top:       {Rate: 2, Burst: 10},
}

// Budgets lists the budgets in a stable order, for documentation.
var Budgets = []Budget{Create, Increment, Strong, Record, Query, Reshard, Delete, Reset, List, History, Top}

// Parse reads "budget=rate:burst,…" over the defaults, e.g.
// "increment=50:100,create=0:1" (rate 0: unlimited).
func Parse(s string) (map[Budget]Limit, error) {
	out := make(map[Budget]Limit, len(Defaults))
	for b, l := range Defaults {
		out[b] = l
	}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, spec, ok := strings.Cut(item, "=")
		if _, known := Defaults[Budget(name)]; !ok || !known {
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

// DefaultsString renders Defaults in Parse's syntax.
func DefaultsString() string {
	var parts []string
	for _, b := range Budgets {
		parts = append(parts, string(b)+"="+Defaults[b].String())
	}
	return strings.Join(parts, ",")
}

// MaxUsers bounds the users remembered per Limiter; the least recently seen
// are forgotten first, which resets their buckets to full.
const MaxUsers = 100_000

// Limiter applies the budgets to users.
type Limiter struct {
	limits map[Budget]Limit
	now    func() time.Time

	mu    sync.Mutex // makes "get or add" of a user atomic
	users *lru.Cache[string, map[Budget]*rate.Limiter]
}

// New returns a limiter with the given budgets (Parse's result).
func New(limits map[Budget]Limit) *Limiter {
	users, _ := lru.New[string, map[Budget]*rate.Limiter](MaxUsers) // size > 0 never fails
	return &Limiter{limits: limits, now: time.Now, users: users}
}

// Take takes n tokens of budget b from the bucket of each key (a user's
// and an address's, say), all or nothing. When they are not all there it
// returns false and how long until they will be. A nil Limiter, an empty
// key and an unlimited budget always allow.
func (l *Limiter) Take(b Budget, n int, keys ...string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	var taken []*rate.Reservation
	var wait time.Duration
	for _, key := range keys {
		lim := l.bucket(key, b)
		if lim == nil {
			continue
		}
		if n > lim.Burst() {
			wait = max(wait, time.Duration(float64(n)/float64(lim.Limit())*float64(time.Second)))
			continue
		}
		r := lim.ReserveN(now, n)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			wait = max(wait, d)
			continue
		}
		taken = append(taken, r)
	}
	if wait > 0 {
		for _, r := range taken {
			r.CancelAt(now)
		}
		return false, wait
	}
	return true, 0
}

// Available returns how many tokens of budget b every key's bucket could
// give now, up to max (max when unlimited).
func (l *Limiter) Available(b Budget, max int, keys ...string) int {
	if l == nil {
		return max
	}
	for _, key := range keys {
		if lim := l.bucket(key, b); lim != nil {
			max = min(max, int(lim.TokensAt(l.now())))
		}
	}
	return max
}

func (l *Limiter) bucket(user string, b Budget) *rate.Limiter {
	if l == nil || user == "" {
		return nil
	}
	limit := l.limits[b]
	if limit.Rate == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	buckets, ok := l.users.Get(user)
	if !ok {
		buckets = map[Budget]*rate.Limiter{}
		l.users.Add(user, buckets)
	}
	lim := buckets[b]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(limit.Rate), limit.Burst)
		buckets[b] = lim
	}
	return lim
}

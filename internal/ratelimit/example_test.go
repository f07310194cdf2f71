package ratelimit_test

import (
	"fmt"

	"github.com/shardcount/shardcount/internal/ratelimit"
)

// RATE_LIMITS lists the budgets to change; the others keep their defaults.
func ExampleParse() {
	limits, _ := ratelimit.Parse("increment=50:100,reshard=0:1", ratelimit.UserDefaults)
	fmt.Println(limits[ratelimit.Increment], limits[ratelimit.Reshard], limits[ratelimit.Query])
	// Output:
	// 50:100 0:1 10:30
}

// Each user has a bucket per budget.
func ExampleLimiter_Take() {
	l := ratelimit.New(ratelimit.Limits{ratelimit.Increment: {Rate: 1, Burst: 2}}, nil, nil)
	for i := range 3 {
		ok, _ := l.Take(ratelimit.Increment, 1, ratelimit.User("alice"))
		fmt.Println("alice", i, ok)
	}
	ok, _ := l.Take(ratelimit.Increment, 1, ratelimit.User("bob"))
	fmt.Println("bob", ok)
	// Output:
	// alice 0 true
	// alice 1 true
	// alice 2 false
	// bob true
}

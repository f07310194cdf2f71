package groupcommit_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardcount/shardcount/internal/groupcommit"
)

// Callers of one key share flushes: here the flush adds up what it is given,
// as one Firestore commit adds up the deltas of its increments.
func ExampleBatcher_Do() {
	var mu sync.Mutex
	total := 0
	b := groupcommit.New(100, 0, func(_ context.Context, key string, deltas []int) []int {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range deltas {
			total += d
		}
		return deltas
	})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { b.Do(context.Background(), "post-1", []int{1}) })
	}
	wg.Wait()
	fmt.Println(total)
	// Output:
	// 50
}

package loadtest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// FirstLikesReport compares a like that creates its counter (the first of
// a post, on a counter of a kind nobody created) with a like of a counter
// that exists, by what the function server counted for each: its commits,
// their writes and the documents read.
type FirstLikesReport struct {
	Posts int     `json:"posts"`
	First PerLike `json:"first"`
	Later PerLike `json:"later"`
	Exact bool    `json:"exact"`
}

// PerLike is what one like cost on average, and how long it took.
type PerLike struct {
	Commits float64 `json:"commits"`
	Writes  float64 `json:"writes"`
	Reads   float64 `json:"reads"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
}

// FirstLikes likes posts counters of the kind likes (KIND likes must be
// declared unique in the servers' COUNTER_KINDS) that nobody created, one
// like each by one user, 8 at a time; then a second user likes each. A like
// of each post is one counter's only op in its commit, so the counts are
// per like.
func FirstLikes(ctx context.Context, f *Functions, posts int) (FirstLikesReport, error) {
	if len(f.Tokens) < 2 {
		return FirstLikesReport{}, fmt.Errorf("first likes: two users' tokens needed")
	}
	run := time.Now().UnixNano()
	ids := make([]string, posts)
	for i := range ids {
		ids[i] = fmt.Sprintf("likes:first-%d-%d", run, i)
	}
	r := FirstLikesReport{Posts: posts, Exact: true}
	for round, per := range []*PerLike{&r.First, &r.Later} {
		before, counted := Snapshot(ctx, f)
		var mu sync.Mutex
		var latencies []float64
		sem := make(chan struct{}, 8)
		var wg sync.WaitGroup
		var failed error
		for i, id := range ids {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				start := time.Now()
				member, out := f.Like(ctx, id, round, true, fmt.Sprintf("first-%d-%d-%d", run, round, i))
				mu.Lock()
				defer mu.Unlock()
				if !out.OK || !member {
					failed = fmt.Errorf("like %d of %s: status %d", round+1, id, out.Status)
				}
				latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
			})
		}
		wg.Wait()
		if failed != nil {
			return r, failed
		}
		after, ok := Snapshot(ctx, f)
		if !counted || !ok {
			return r, fmt.Errorf("first likes: the servers' counts are not available")
		}
		a, b := after.Firestore["increment"], before.Firestore["increment"]
		n := float64(posts)
		per.Commits, per.Writes, per.Reads = float64(a.Commits-b.Commits)/n, float64(a.Writes-b.Writes)/n, float64(a.Reads-b.Reads)/n
		sort.Float64s(latencies)
		per.P50MS, per.P99MS = latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	}
	for _, id := range ids {
		if v, err := f.Strong(ctx, id); err != nil || v != 2 {
			r.Exact = false
		}
	}
	return r, nil
}

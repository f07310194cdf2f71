package counter_test

import (
	"fmt"

	"github.com/shardcount/shardcount/internal/counter"
)

// A post's expected reach picks its shard count: a shard takes about one
// write per second at the post's peak.
func ExampleShardsFor() {
	fmt.Println(counter.ShardsFor(2_500, counter.Public))
	fmt.Println(counter.ShardsFor(250_000, counter.Protected))
	fmt.Println(counter.ShardsFor(50_000_000, counter.Public))
	// Output:
	// 3
	// 25
	// 1000
}

// Shrinking to n shards merges each shard k >= n into shard k mod n.
func ExampleMergeTarget() {
	for _, k := range []int{3, 4, 49} {
		fmt.Printf("shard %d -> %d\n", k, counter.MergeTarget(k, 3))
	}
	// Output:
	// shard 3 -> 0
	// shard 4 -> 1
	// shard 49 -> 1
}

func ExampleValidateID() {
	fmt.Println(counter.ValidateID("post-1"))
	fmt.Println(counter.ValidateID("likes:post-1"))
	fmt.Println(counter.ValidateID("a/b"))
	// Output:
	// <nil>
	// <nil>
	// INVALID_ARGUMENT: counter_id may contain only letters, digits, '_', '.', '-' and ':' (a counter of a kind: KIND:KEY)
}

func ExampleParseKinds() {
	kinds, err := counter.ParseKinds(`{"likes": {"unique": true, "num_shards": 8}, "views": {"num_shards": 4, "ranked": false}}`)
	if err != nil {
		panic(err)
	}
	likes, _ := kinds.Of("likes:post-1")
	c := likes.Counter("likes:post-1")
	fmt.Println(c.ID, c.Kind, c.NumShards, c.Mode.Members(), c.Origin, c.Ranked)
	_, ok := kinds.Of("shares:post-1")
	fmt.Println(ok)
	_, err = counter.ParseKinds(`{"likes": {"uniq": true}}`)
	fmt.Println(err)
	// Output:
	// likes:post-1 likes 8 true kind true
	// false
	// kind "likes": unknown option "uniq" (options: unique, join_only, choices, distinct, num_shards, ranked, decrement, auto_sharding, keys_in, mirror)
}

package shardedts_test

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"

	"github.com/shardcount/shardcount/internal/shardedts"
)

// A query runs once per chunk of at most 30 shard values (Firestore's "in"
// limit), each ordered newest first; Page merges their results.
func ExampleCollection_Plan() {
	client, _ := firestore.NewClient(context.Background(), "demo-example", option.WithoutAuthentication(), option.WithEndpoint("127.0.0.1:1"))
	defer client.Close()
	for _, shards := range []int{3, 64} {
		c := shardedts.New(client.Collection("instruments"), shards, []byte("key"))
		queries, _ := c.Plan(shardedts.Filter{Field: "exchange", Value: "EXCHG1"}, 20, "")
		fmt.Printf("%d shard values: %d queries of %d chunks\n", shards, len(queries), len(c.Chunks()))
	}
	// Output:
	// 3 shard values: 1 queries of 1 chunks
	// 64 shard values: 3 queries of 3 chunks
}

// A page token is bound to its filter: it does not resume another query.
func ExampleErrBadToken() {
	client, _ := firestore.NewClient(context.Background(), "demo-example", option.WithoutAuthentication(), option.WithEndpoint("127.0.0.1:1"))
	defer client.Close()
	c := shardedts.New(client.Collection("instruments"), 3, []byte("key"))
	_, err := c.Plan(shardedts.Filter{Field: "exchange", Value: "EXCHG1"}, 20, "not-a-token")
	fmt.Println(err)
	// Output:
	// shardedts: invalid page token
}

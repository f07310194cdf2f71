package client

import (
	"reflect"
	"slices"
	"testing"

	"github.com/shardcount/shardcount/internal/service"
	"github.com/shardcount/shardcount/internal/wire"
	"github.com/shardcount/shardcount/internal/wirejson"
)

// TestTheClientsAnswersAreTheFunctions: each answer type of the Go client
// carries every field of the function's answer, by name, and no other
// (the wire contract, declared by the core's structs): a field added to
// one and not the other fails here.
func TestTheClientsAnswersAreTheFunctions(t *testing.T) {
	for _, pair := range []struct {
		client, function reflect.Type
	}{
		{reflect.TypeFor[Incremented](), reflect.TypeFor[wire.IncrementCounterResponse]()},
		{reflect.TypeFor[Created](), reflect.TypeFor[wire.CreateCounterResponse]()},
		{reflect.TypeFor[Counter](), reflect.TypeFor[wire.GetCounterResponse]()},
		{reflect.TypeFor[Ranking](), reflect.TypeFor[wire.TopCountersResponse]()},
		{reflect.TypeFor[Members](), reflect.TypeFor[wire.ListMembersResponse]()},
		{reflect.TypeFor[Erased](), reflect.TypeFor[wire.EraseMemberResponse]()},
		{reflect.TypeFor[Page](), reflect.TypeFor[service.GetCountersResponse]()},
	} {
		got, want := wirejson.Names(pair.client), wirejson.Names(pair.function)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("the client's %s carries %v; %s answers %v", pair.client.Name(), got, pair.function.Name(), want)
		}
	}
}

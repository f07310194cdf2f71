package increment

import (
	"slices"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/distinct"
)

var video = counter.Counter{ID: "views:v", NumShards: 10, Mode: counter.Distinct, Version: created, CreatedAt: created}

func TestABatchOfOneViewerGoesToTheirShard(t *testing.T) {
	ana := int(distinct.Hash("ana") % 10)
	for _, tc := range []struct {
		name  string
		ops   []Op
		shard int
		home  bool
	}{
		{"one view", []Op{add("ana", 1)}, ana, true},
		{"one viewer's views", []Op{add("ana", 1), add("ana", 1, "k")}, ana, true},
		{"two viewers: any shard", []Op{add("ana", 1), add("ben", 1)}, 0, false},
	} {
		if shard, home := HomeShard(video, tc.ops); shard != tc.shard || home != tc.home {
			t.Errorf("%s: shard %d, home %v; want %d, %v", tc.name, shard, home, tc.shard, tc.home)
		}
	}
}

func TestAViewersKeyIsOfAnIncarnationAndItsBuckets(t *testing.T) {
	hour := now.Truncate(time.Hour)
	again := video
	again.CreatedAt = created.Add(time.Minute) // deleted and created again
	first := unused
	first.Mode = counter.Distinct // its first use: not created yet
	key := ViewerKey(video, []time.Time{hour}, "ana")
	for _, tc := range []struct {
		name string
		got  string
		same bool
	}{
		{"the same viewer, counter and hour", ViewerKey(video, []time.Time{hour}, "ana"), true},
		{"another viewer", ViewerKey(video, []time.Time{hour}, "ben"), false},
		{"the next hour", ViewerKey(video, []time.Time{hour.Add(time.Hour)}, "ana"), false},
		{"another incarnation", ViewerKey(again, []time.Time{hour}, "ana"), false},
		{"windows off: no buckets", ViewerKey(video, nil, "ana"), false},
	} {
		if (tc.got == key) != tc.same {
			t.Errorf("%s: key %q against %q, want the same: %v", tc.name, tc.got, key, tc.same)
		}
	}
	if k := ViewerKey(first, []time.Time{hour}, "ana"); k != "" {
		t.Errorf("a counter not created yet has key %q for a viewer, want none: it would outlive it", k)
	}
}

func TestOnlyKnownViewersAnswerWithoutACommit(t *testing.T) {
	hour := []time.Time{now.Truncate(time.Hour)}
	remembered := map[string]int{ViewerKey(video, hour, "ana"): 3}
	lookup := func(key string) (int, bool) { k, ok := remembered[key]; return k, ok }
	other := video
	other.CreatedAt = created.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		op    Op
		known bool
	}{
		{"a known viewer", Op{User: "ana", Delta: 1, Counter: video}, true},
		{"a known viewer, not read by a caller", Op{User: "ana", Delta: 1}, true},
		{"a new viewer", Op{User: "ben", Delta: 1, Counter: video}, false},
		{"a known viewer with a key", Op{User: "ana", Delta: 1, Key: "k", Counter: video}, false},
		{"a known viewer authorized on another incarnation", Op{User: "ana", Delta: 1, Counter: other}, false},
	} {
		known, rest := KnownViewers(video, []Op{add("cy", 1), tc.op}, hour, lookup)
		if got := known[1] == 3 && slices.Equal(rest, []int{0}); got != tc.known {
			t.Errorf("%s: known %v, rest %v; want it known: %v", tc.name, known, rest, tc.known)
		}
	}
}

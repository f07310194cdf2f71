package reactions

import (
	"reflect"
	"slices"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

func TestStriderGivesEachWorkerItsOwnUsers(t *testing.T) {
	s := loadtest.NewStrider(10, 4)
	var got []int
	for range 4 {
		got = append(got, s.User(1))
	}
	if want := []int{1, 5, 9, 1}; !slices.Equal(got, want) {
		t.Errorf("worker 1 plays %v, want %v", got, want)
	}
}

func TestTallyEqualCountsAnAbsentChoiceAsZero(t *testing.T) {
	a := Tally{Count: 2, Counts: map[string]int64{"like": 2, "wow": 0}}
	if !a.Equal(Tally{Count: 2, Counts: map[string]int64{"like": 2}}) {
		t.Error("a choice of 0 differs from an absent one")
	}
	for _, b := range []Tally{{Count: 2, Counts: map[string]int64{"love": 2}}, {Count: 1, Counts: map[string]int64{"like": 2}}, {Count: 2, Counts: map[string]int64{"like": 2, "sad": 1}}} {
		if a.Equal(b) || b.Equal(a) {
			t.Errorf("%+v equals %+v", a, b)
		}
	}
}

func TestShardMove(t *testing.T) {
	for _, tc := range []struct {
		old, now string
		count    int64
		counts   map[string]int64
	}{
		{"", "love", 1, map[string]int64{"love": 1}},
		{"love", "", -1, map[string]int64{"love": -1}},
		{"love", "sad", 0, map[string]int64{"love": -1, "sad": 1}},
	} {
		counts := map[string]any{}
		for c, n := range tc.counts {
			counts[c] = firestore.Increment(n)
		}
		want := map[string]any{"count": firestore.Increment(tc.count), "counts": counts}
		if got := shardMove(tc.old, tc.now); !reflect.DeepEqual(got, want) {
			t.Errorf("%q -> %q: %v, want %v", tc.old, tc.now, got, want)
		}
	}
}

package counter

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/errs"
)

func TestShardsFor(t *testing.T) {
	for _, tc := range []struct {
		followers int64
		post      PostType
		want      int
	}{
		{0, Public, 1},
		{1, Public, 1},
		{1_000, Public, 1},
		{1_001, Public, 2},
		{10_000, Public, 10},
		{250_000, Public, 250},
		{999_000, Public, 999},
		{1_000_000, Public, 1000},
		{50_000_000, Public, 1000},
		{0, Protected, 1},
		{10_000, Protected, 1},
		{10_001, Protected, 2},
		{1_000_000, Protected, 100},
		{10_000_000, Protected, 1000},
		{50_000_000, Protected, 1000},
		{-5, Public, 1},
		// Near the int64 maximum ceil(followers/k) must not overflow into 1.
		{math.MaxInt64, Public, 1000},
		{math.MaxInt64 - 1, Protected, 1000},
	} {
		if got := ShardsFor(tc.followers, tc.post); got != tc.want {
			t.Errorf("ShardsFor(%d, %s) = %d, want %d", tc.followers, tc.post, got, tc.want)
		}
	}
}

func TestValidateID(t *testing.T) {
	for _, ok := range []string{"a", "post-123_likes.v2", strings.Repeat("x", 128), "__a", "a__", "_", "..."} {
		if err := ValidateID(ok); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "__x__", "____", "a/b", "a b", "é", strings.Repeat("x", 129), "a\x00"} {
		err := ValidateID(bad)
		if !errs.Is(err, errs.InvalidArgument) || !strings.HasPrefix(err.(*errs.Error).Message, "counter_id ") {
			t.Errorf("ValidateID(%q) = %v, want INVALID_ARGUMENT naming counter_id", bad, err)
		}
	}
	for range 100 {
		if id := NewID(); ValidateID(id) != nil {
			t.Fatalf("NewID() = %q is not valid", id)
		}
	}
}

func TestValidateDelta(t *testing.T) {
	for _, d := range []int64{1, -1, MaxDelta, -MaxDelta} {
		if err := ValidateDelta(d); err != nil {
			t.Errorf("ValidateDelta(%d) = %v", d, err)
		}
	}
	for _, d := range []int64{0, MaxDelta + 1, -MaxDelta - 1} {
		if err := ValidateDelta(d); !errs.Is(err, errs.InvalidArgument) {
			t.Errorf("ValidateDelta(%d) = %v, want INVALID_ARGUMENT", d, err)
		}
	}
}

func TestDeltaFor(t *testing.T) {
	if d, err := DeltaFor("increment"); d != 1 || err != nil {
		t.Errorf("increment: %d, %v", d, err)
	}
	if d, err := DeltaFor("decrement"); d != -1 || err != nil {
		t.Errorf("decrement: %d, %v", d, err)
	}
	if _, err := DeltaFor("like"); !errs.Is(err, errs.InvalidArgument) {
		t.Errorf("like: %v", err)
	}
}

func TestAddAndBound(t *testing.T) {
	for _, tc := range []struct {
		a, b int64
		sum  int64
		ok   bool
	}{
		{1, 2, 3, true},
		{math.MaxInt64, 1, 0, false},
		{math.MinInt64, -1, 0, false},
		{math.MaxInt64, -1, math.MaxInt64 - 1, true},
		{-5, 5, 0, true},
	} {
		if sum, ok := Add(tc.a, tc.b); sum != tc.sum || ok != tc.ok {
			t.Errorf("Add(%d, %d) = %d, %v", tc.a, tc.b, sum, ok)
		}
	}
	if !InBound(MaxCount) || !InBound(-MaxCount) || InBound(MaxCount+1) || InBound(-MaxCount-1) {
		t.Error("InBound is not ±MaxCount")
	}
	if !Saturated(math.MaxInt64) || !Saturated(math.MinInt64) || Saturated(MaxCount) {
		t.Error("Saturated")
	}
}

func TestKeysIn(t *testing.T) {
	for keysIn, ok := range map[string]bool{"posts": true, "forums/f1/posts": true, "forums/f1": false, "": false, "posts/": false, "__x__": false, "..": false,
		"counters": false, "counters/c1/members": false, "shardcount_erasures": false, "forums/f1/counters": true} {
		_, err := ParseKinds(`{"likes": {"keys_in": "` + keysIn + `"}}`)
		if (err == nil) != ok {
			t.Errorf("keys_in %q: %v, want ok=%v", keysIn, err, ok)
		}
	}
	kinds, err := ParseKinds(`{"likes": {"unique": true, "keys_in": "posts"}}`)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kinds.Of("likes:p1")
	for id, want := range map[string]string{"likes:p1": "posts/p1", "likes:": "", "likes:..": "", "likes:__p__": "", "likes:a:b": "posts/a:b"} {
		if got, ok := k.KeyDocument(id); got != want || ok != (want != "") {
			t.Errorf("KeyDocument(%q) = %q, %v; want %q", id, got, ok, want)
		}
	}
}

func TestChoiceKinds(t *testing.T) {
	kinds, err := ParseKinds(`{"reactions": {"choices": ["like", "love", "wow"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := kinds["reactions"].Counter("reactions:p")
	if c.Mode != Choice || !slices.Equal(c.Choices, []string{"like", "love", "wow"}) {
		t.Errorf("a choice kind's counter: %+v, want unique with its choices", c)
	}
	for _, bad := range []string{
		`{"r": {"choices": []}}`,
		`{"r": {"choices": ["Like"]}}`,
		`{"r": {"choices": ["a.b"]}}`,
		`{"r": {"choices": ["like", "like"]}}`,
		`{"r": {"choices": ["like"], "unique": true}}`,
		`{"r": {"choices": ["like"], "decrement": "users"}}`,
		`{"r": {"choices": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u"]}}`,
	} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%s) accepted it", bad)
		}
	}
}

func TestDistinctKinds(t *testing.T) {
	kinds, err := ParseKinds(`{"viewers": {"distinct": true, "num_shards": 4}}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := kinds["viewers"].Counter("viewers:v"); c.Mode != Distinct || c.Mode.Members() || kinds["viewers"].Grows() {
		t.Errorf("a distinct kind's counter: %+v, grows %v; want distinct, not unique, never grown", c, kinds["viewers"].Grows())
	}
	for _, bad := range []string{
		`{"v": {"distinct": true, "unique": true}}`,
		`{"v": {"distinct": true, "choices": ["a"]}}`,
		`{"v": {"distinct": true, "auto_sharding": true}}`,
		`{"v": {"distinct": true, "decrement": "users"}}`,
	} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%s) accepted it", bad)
		}
	}
}

// TestKindsAreReadStrictly: COUNTER_KINDS names each kind and option once,
// in its own case, and no option empty: what a typo would otherwise make
// count otherwise, silently.
func TestKindsAreReadStrictly(t *testing.T) {
	for _, tc := range []struct {
		kinds string
		ok    bool
	}{
		{`{"likes": {"unique": true}, "likes": {"unique": false}}`, false},
		{`{"reactions": {"Choices": ["like"]}}`, false},
		{`{"likes": {"unique": true, "unique": false}}`, false},
		{`{"viewers": {"distinct": true, "num_shards": 0}}`, false},
		{`{"viewers": {"distinct": true, "num_shards": 4}}`, true},
		{`{"likes": {"unique": true, "keys_in": ""}}`, false},
		{`{"likes": {"unique": true, "decrement": ""}}`, false},
		{`{"likes": {"unique": true, "mirror": "likes"}}`, false},
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": "likes"}}`, true},
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": "stats.likes"}}`, false},
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": ""}}`, false},
		{`{"reactions": {"choices": ["like"], "keys_in": "posts", "mirror": "reactions"}}`, true},
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": "__likes__"}}`, false}, // Firestore refuses the field: every roll-up failed
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": "__likes"}}`, true},
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": "n"}, "views": {"keys_in": "posts", "mirror": "n"}}`, false},
		{`{"likes": {"unique": true, "keys_in": "posts", "mirror": "n"}, "views": {"keys_in": "videos", "mirror": "n"}}`, true},
		{`{"likes": {"unique": true, "keys_in": "` + strings.Repeat("a/b/", 49) + `c"}}`, false}, // 99 segments
		{`{"likes": {"unique": true, "keys_in": "` + strings.Repeat("x", 1025) + `"}}`, false},
	} {
		if _, err := ParseKinds(tc.kinds); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.kinds, err, tc.ok)
		}
	}
}

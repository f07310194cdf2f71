package distinct

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/axiomhq/hyperloglog"
)

var update = flag.Bool("update", false, "write testdata's pinned sketches (only when the format changes on purpose: old shards must still read)")

// members are n distinct uids.
func members(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// TestASketchOfTodayReadsTheSameTomorrow: the shards keep a sketch's
// bytes, so a sketch written by this version (testdata, in base64: one
// sparse and one dense) must parse to the same estimate, take the same members as no
// change, and write the same bytes, in every later version.
func TestASketchOfTodayReadsTheSameTomorrow(t *testing.T) {
	for _, tc := range []struct {
		file     string
		n        int
		estimate int64
	}{{"testdata/sparse-100.b64", 100, 100}, {"testdata/dense-20000.b64", 20000, 19691}} {
		s := New()
		for _, m := range members("pinned", tc.n) {
			s.Add(m)
		}
		if *update {
			if err := os.WriteFile(tc.file, []byte(base64.StdEncoding.EncodeToString(s.Bytes())+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		text, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		pinned, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
		if err != nil {
			t.Fatal(err)
		}
		old, err := Parse(pinned)
		if err != nil {
			t.Fatal(err)
		}
		if got := old.Estimate(); got != tc.estimate {
			t.Errorf("%s estimates %d, want %d as when it was written", tc.file, got, tc.estimate)
		}
		if !bytes.Equal(s.Bytes(), pinned) {
			t.Errorf("%s: the same members write other bytes now (%d against %d)", tc.file, len(s.Bytes()), len(pinned))
		}
		for _, m := range members("pinned", tc.n) {
			old.Add(m)
		}
		if got := old.Estimate(); got != tc.estimate {
			t.Errorf("%s after its members again: %d, want %d", tc.file, got, tc.estimate)
		}
	}
}

// TestMergedShardsEstimateTheWhole: members spread over shards, some on
// several, estimate as one sketch of them all; within 3 standard errors.
func TestMergedShardsEstimateTheWhole(t *testing.T) {
	for _, n := range []int{1000, 10_000, 100_000} {
		shards := make([]*Sketch, 10)
		for i := range shards {
			shards[i] = New()
		}
		for i, m := range members("m", n) {
			shards[i%10].Add(m)
			shards[(i*7)%10].Add(m) // a member added on two shards counts once
		}
		whole := New()
		for _, s := range shards {
			again, err := Parse(s.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if err := whole.Merge(again); err != nil {
				t.Fatal(err)
			}
		}
		if err := math.Abs(float64(whole.Estimate())-float64(n)) / float64(n); err > 3*StandardError {
			t.Errorf("%d members: estimate %d, off by %.2f%%", n, whole.Estimate(), 100*err)
		}
	}
}

func TestBadBytesAreAnError(t *testing.T) {
	if _, err := Parse([]byte{2, 99, 1}); err == nil {
		t.Error("bytes no sketch wrote parsed")
	}
	other, err := hyperloglog.NewSketch(Precision-1, true)
	if err != nil {
		t.Fatal(err)
	}
	other.Insert([]byte("ana"))
	b, _ := other.MarshalBinary()
	if _, err := Parse(b); err == nil {
		t.Error("a sketch of another precision parsed: no sketch of ours merges with it")
	}
	if s, err := Parse(nil); err != nil || s.Estimate() != 0 {
		t.Errorf("no bytes: %v, %v; want an empty sketch", s, err)
	}
}

var table = flag.Bool("table", false, "print the estimate's error table of bench/README.md (10³ to 10⁶ members, 5 runs each)")

// TestErrorTable prints, with -table, the estimate's relative error at
// 10³ to 10⁶ distinct members over 10 shards, median and worst of five
// runs of other members each: bench/README.md's "Distinct counts".
func TestErrorTable(t *testing.T) {
	if !*table {
		t.Skip("with -table")
	}
	fmt.Println("| members | median error | worst error | sketch bytes (one shard) |")
	fmt.Println("|---:|---:|---:|---:|")
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		var errs []float64
		size := 0
		for run := range 5 {
			shards := make([]*Sketch, 10)
			for i := range shards {
				shards[i] = New()
			}
			for i, m := range members(fmt.Sprintf("run%d", run), n) {
				shards[i%10].Add(m)
			}
			whole := New()
			for _, s := range shards {
				if err := whole.Merge(s); err != nil {
					t.Fatal(err)
				}
			}
			size = max(size, len(shards[0].Bytes()))
			errs = append(errs, math.Abs(float64(whole.Estimate()-int64(n)))/float64(n))
		}
		slices.Sort(errs)
		fmt.Printf("| %d | %.2f%% | %.2f%% | %d |\n", n, 100*errs[2], 100*errs[4], size)
	}
}

// TestAddAllSaysWhetherTheSketchChanged: members a sketch holds already
// change nothing, in any order and in either form (sparse, then dense);
// a new member changes a sparse sketch, and new members a dense one (a
// dense sketch keeps registers: a new member raises one about half the
// time at 20,000). The answer decides whether a commit writes the sketch
// back (up to 16 KB a shard).
func TestAddAllSaysWhetherTheSketchChanged(t *testing.T) {
	for _, n := range []int{50, 20_000} {
		seen := members("seen", n)
		s := New()
		if !s.AddAll(seen) {
			t.Fatalf("%d members into an empty sketch: unchanged", n)
		}
		again := slices.Clone(seen)
		slices.Reverse(again)
		for _, batch := range [][]string{seen[:1], again, again[:n/2], nil} {
			if s.AddAll(batch) {
				t.Errorf("%d members: %d of them again changed the sketch", n, len(batch))
			}
		}
		reread, err := Parse(s.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if reread.AddAll(seen) || reread.Estimate() != s.Estimate() {
			t.Errorf("%d members: the sketch as stored changed with its members again", n)
		}
		fresh := []string{"new-member"}
		if n > 1000 {
			fresh = members("new", 20)
		}
		if !s.AddAll(append(again[:3:3], fresh...)) {
			t.Errorf("%d members: %d new ones left the sketch unchanged", n, len(fresh))
		}
	}
}

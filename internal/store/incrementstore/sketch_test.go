package incrementstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/store/shared"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/store/incrementstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestViewersAgainWriteNothing: a distinct counter's commit writes back
// only the sketches its members changed (each up to 16 KB): viewers the
// shard, the hour and the day hold already write nothing, a viewer back
// in a new hour writes that hour's sketch and the shard as it was (its
// event rolls the counter up, which sets the hour's estimate), and a new
// viewer all three (the first commit marks the counter active too, for
// a day). The clock is the test's, so the hour turns when it says.
func TestViewersAgainWriteNothing(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("views"))
	ctx := context.Background()
	now := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	base := shared.New(db, shared.Options{Now: func() time.Time { return now }})
	counters := counterstore.New(base, counterstore.Options{})
	s := incrementstore.New(base, counters, incrementstore.Options{Windows: windows.DefaultRetention, ActivityEvery: 24 * time.Hour})
	if _, err := counters.Create(ctx, counter.Counter{ID: "video", NumShards: 1, Mode: counter.Distinct}); err != nil {
		t.Fatal(err)
	}
	view := func(members ...string) int64 {
		before := db.Stats()["other"].Writes
		var ops []increment.Op
		for _, m := range members {
			ops = append(ops, increment.Op{Delta: 1, User: m})
		}
		for _, r := range s.Apply(ctx, "video", ops) {
			if r.Err != nil || r.Delta != 1 {
				t.Fatalf("a view of %v: %+v", members, r)
			}
		}
		return db.Stats()["other"].Writes - before
	}
	for _, step := range []struct {
		what    string
		members []string
		next    time.Duration // the clock moves on by so much first
		writes  int64
	}{
		{"three viewers: the shard, the hour, the day and the activity marker", []string{"ana", "ben", "cy"}, 0, 4},
		{"two of them again, in the same hour", []string{"cy", "ana"}, 0, 0},
		{"one of them in the next hour: that hour's sketch, and the shard for its event", []string{"ben"}, time.Hour, 2},
		{"a new viewer with one seen", []string{"ben", "dee"}, 0, 3},
	} {
		now = now.Add(step.next)
		if got := view(step.members...); got != step.writes {
			t.Errorf("%s: %d writes, want %d", step.what, got, step.writes)
		}
	}
	c, err := counters.Live(ctx, "video")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, err := counters.Sums(ctx, c, time.Time{}); err != nil || n.Count != 4 {
		t.Errorf("estimate %d (%v), want the 4 viewers", n.Count, err)
	}
}

// TestAViewerBackAloneWritesNothing: a commit of one viewer goes to the
// viewer's shard, so on a counter of 10 shards each of 20 people who come
// back alone (a counter viewed now and then) writes nothing the second
// time, on another instance, where a shard at random would have held them
// one time in ten.
func TestAViewerBackAloneWritesNothing(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("views"))
	ctx := context.Background()
	now := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour) // no hour turns between the rounds
	base := shared.New(db, shared.Options{Now: func() time.Time { return now }})
	counters := counterstore.New(base, counterstore.Options{})
	if _, err := counters.Create(ctx, counter.Counter{ID: "clip", NumShards: 10, Mode: counter.Distinct}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		// Each round on an instance of its own: the second does not
		// remember the viewers of the first (TestAViewerSeenCostsNothing).
		s := incrementstore.New(base, counters, incrementstore.Options{Windows: windows.DefaultRetention, ActivityEvery: 24 * time.Hour})
		before := db.Stats()["other"].Writes
		for p := range 20 {
			if r := s.Apply(ctx, "clip", []increment.Op{{Delta: 1, User: fmt.Sprintf("person-%d", p)}}); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
		}
		writes := db.Stats()["other"].Writes - before
		if round == 1 && writes != 0 {
			t.Errorf("20 people back alone: %d writes, want none", writes)
		}
	}
}

// TestAViewerSeenCostsNothing: an instance remembers the viewers it added
// to a shard's sketches this hour, so one of them viewing again costs no
// Firestore operation at all; another instance reads the sketches and
// writes nothing; in the next hour the first reads them again and writes
// that hour's sketch (and the shard, for its event); another incarnation
// of the id remembers nothing.
func TestAViewerSeenCostsNothing(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t, testenv.NewProjectID("views"))
	ctx := context.Background()
	now := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	base := shared.New(db, shared.Options{Now: func() time.Time { return now }})
	counters := counterstore.New(base, counterstore.Options{})
	opts := incrementstore.Options{Windows: windows.DefaultRetention, ActivityEvery: 24 * time.Hour}
	first, second := incrementstore.New(base, counters, opts), incrementstore.New(base, counters, opts)
	c, err := counters.Create(ctx, counter.Counter{ID: "reel", NumShards: 4, Mode: counter.Distinct})
	if err != nil {
		t.Fatal(err)
	}
	shard := -1 // the shard of ana's first view, which every answer names
	view := func(s *incrementstore.Store, on counter.Counter) (reads, writes int64) {
		before := db.Stats()["other"]
		r := s.Apply(ctx, "reel", []increment.Op{{Delta: 1, User: "ana", Counter: on, Fresh: now.Add(time.Minute)}})
		if shard < 0 {
			shard = r[0].Shard
		}
		if r[0].Err != nil || r[0].Delta != 1 || r[0].Shard != shard {
			t.Fatalf("a view: %+v, want shard %d", r[0], shard)
		}
		after := db.Stats()["other"]
		return after.Reads - before.Reads, after.Writes - before.Writes
	}
	other := c
	other.CreatedAt = c.CreatedAt.Add(time.Hour) // the id deleted and created again, as the op read it
	for _, step := range []struct {
		what          string
		s             *incrementstore.Store
		on            counter.Counter
		next          time.Duration
		reads, writes int64
	}{
		{"the first view: the sketches, and the activity marker", first, c, 0, 3, 4},
		{"again on the same instance", first, c, 0, 0, 0},
		{"again on another instance", second, c, 0, 3, 0},
		{"in the next hour", first, c, time.Hour, 3, 2},
		{"on the id's next incarnation", first, other, 0, 3, 0},
	} {
		now = now.Add(step.next)
		if reads, writes := view(step.s, step.on); reads != step.reads || writes != step.writes {
			t.Errorf("%s: %d reads and %d writes, want %d and %d", step.what, reads, writes, step.reads, step.writes)
		}
	}
	// A batch of known and new viewers: each op answers its own, in order.
	ops := []increment.Op{{Delta: 1, User: "ana"}, {Delta: 1, User: "bea"}, {Delta: 1, User: "ana"}, {Delta: 1, User: "cem", Key: "k1"}}
	for i, r := range first.Apply(ctx, "reel", ops) {
		if r.Err != nil || r.Delta != 1 || r.Shard < 0 || ops[i].User == "ana" && r.Shard != shard {
			t.Errorf("op %d of a mixed batch (%s): %+v", i, ops[i].User, r)
		}
	}
	if n, _, err := counters.Sums(ctx, c, time.Time{}); err != nil || n.Count != 3 {
		t.Errorf("estimate %d (%v), want ana, bea and cem", n.Count, err)
	}
}

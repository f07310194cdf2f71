package store_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/store/memberstore"
	"github.com/shardcount/shardcount/internal/store/shared"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/activity"
	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/indexcheck"
	. "github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/shardedts"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/store/instrumentstore"
	"github.com/shardcount/shardcount/internal/store/rollupstore"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestIndexesServeEveryQuery builds every query the functions can run,
// with the code that runs them, and checks that firestore.indexes.json (or
// a single-field index) serves each one and that the file holds no index
// that none uses. The emulator runs queries without indexes, so nothing
// else would notice a missing one before production rejects the query.
func TestIndexesServeEveryQuery(t *testing.T) {
	t.Parallel()
	file, err := indexcheck.Load("../../firestore.indexes.json")
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.DB(t, testenv.NewProjectID("index"))
	used := map[int]bool{}
	base := shared.New(db, shared.Options{})
	counters, members := counterstore.New(base, counterstore.Options{}), memberstore.New(base)
	rollups, windowStore := rollupstore.New(base, rollupstore.Options{}), windowstore.New(db, windows.UTC)
	now := time.Now()
	queries := map[string]firestore.Query{}
	// The apps' own query, in their clients (docs/guides/likes.md): a
	// user's likes of one kind, newest first.
	queries["a user's likes of a kind"] = db.CollectionGroup("members").Where("uid", "==", "u1").Where("kind", "==", "likes").
		OrderBy("joined_at", firestore.Desc).Limit(20)
	for slot := range windows.PeakSlots {
		for name, by := range map[string]windowstore.By{"peak": windowstore.ByPeak(slot), "carry": windowstore.ByCarry(slot)} {
			queries[fmt.Sprint("top by ", name, " ", slot)] = windowStore.TopQuery(windows.Day, windows.UTC.Start(windows.Day, now), 10, "", by)
			queries[fmt.Sprint("top of a kind by ", name, " ", slot)] = windowStore.TopQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), 10, "likes", by)
		}
	}
	maps.Copy(queries, map[string]firestore.Query{
		"list one owner's":                      counters.ListQuery("uid", false, "", 20),
		"list one owner's, on":                  counters.ListQuery("uid", false, "post-1", 20),
		"list all":                              counters.ListQuery("", true, "post-1", 20),
		"sweep":                                 rollups.SweepQuery("post-1", 300),
		"history":                               windowStore.HistoryQuery("post-1", windows.Minute, now.Add(-time.Hour), now),
		"top of a window":                       windowStore.TopQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), 10, "", windowstore.ByCount),
		"top by total":                          windowStore.TopQuery("", time.Time{}, 10, "", windowstore.ByCount),
		"top of a kind":                         windowStore.TopQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), 10, "likes", windowstore.ByCount),
		"top of a kind, total":                  windowStore.TopQuery("", time.Time{}, 10, "likes", windowstore.ByCount),
		"a distinct kind's hour by estimate":    windowStore.TopQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), 10, "viewers", windowstore.ByEstimate),
		"a choice's members (the audit)":        members.ChoiceQuery("reactions:p", "love"),
		"a distinct counter's sketches":         shared.SketchesQuery(db, "watchers:v", windows.Day, now.Add(-30*24*time.Hour), now),
		"rising's candidates by rise":           windowStore.TopQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), 25, "", windowstore.ByRise),
		"rising's candidates of a kind by rise": windowStore.TopQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), 25, "likes", windowstore.ByRise),
		"rising's baseline":                     windowStore.SpanQuery("post-1", windows.Hour, now.Add(-25*time.Hour), now.Add(-time.Hour)),
		// A choice's buckets are of a granularity of their own: the same indexes.
		"top of a choice":                                  windowStore.TopQuery(windows.Hour.Of("love"), windows.UTC.Start(windows.Hour, now), 10, "reactions", windowstore.ByCount),
		"top of a choice, total":                           windowStore.TopQuery(windows.AllTime.Of("love"), windows.AllTimeStart, 10, "reactions", windowstore.ByCount),
		"top of a choice by carry":                         windowStore.TopQuery(windows.Day.Of("love"), windows.UTC.Start(windows.Day, now), 10, "reactions", windowstore.ByCarry(3)),
		"a bucket's ranked buckets (the upgrade's check)":  windowStore.BucketsQuery(windows.Hour, windows.UTC.Start(windows.Hour, now), "", windowstore.ByCount),
		"a bucket's carried buckets (the upgrade's check)": windowStore.BucketsQuery(windows.Day, windows.UTC.Start(windows.Day, now), "", windowstore.ByCarry(0)),
		"a rolling window":                                 windowStore.SpanQuery("likes:p1", windows.Minute, now.Add(-time.Hour), now.Add(time.Hour)),
		"a user's likes":                                   members.LikedByQuery("u1", 20),
		"a user's memberships":                             members.MembershipsQuery("u1", counter.Membership{}, 100),
		"memberships, after":                               members.MembershipsQuery("u1", counter.Membership{CounterID: "likes:p1", Path: "counters/likes:p1/members/u1", JoinedAt: now}, 100),
		"a counter's members":                              members.MembersQuery("likes:p1", "u1", 20),
		"a reader's memberships of a page":                 members.HoldsQuery("u1", []string{"likes:p1", "reactions:p1"}),
		"the erasures since a look":                        members.ErasuresQuery(now.Add(-time.Hour)),
		"markers, first":                                   rollups.MarkersQueries(0, activity.Cursor{}, now, 300)[0],
		"markers, after":                                   rollups.MarkersQueries(0, activity.Cursor{At: now, ID: "c"}, now, 300)[0],
	})
	for name, q := range queries {
		shape, err := indexcheck.ShapeOf(q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if i := file.Serving(shape); i >= 0 {
			used[i] = true
		} else if !file.SingleField(shape) {
			t.Errorf("%s: no index serves %s", name, shape)
		}
	}
	for _, shards := range []int{1, 3, 30, 64, 1000} {
		s := instrumentstore.New(db, shards, []byte("secret"))
		for _, field := range QueryFields {
			// A real token for the second page, to plan a query with a cursor.
			batch := make([]Instrument, 2)
			for i := range batch {
				batch[i] = Instrument{Symbol: "S", Price: Price{Currency: "CUR", Micros: 1}, Exchange: "X", InstrumentType: "T",
					Timestamp: time.Now().UTC().Add(time.Duration(i) * time.Second)}
			}
			if _, err := s.Record(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			value := map[string]string{"instrumentType": "T", "exchange": "X", "price.currency": "CUR"}[field]
			_, token, err := s.Query(context.Background(), field, value, 1, "")
			if err != nil || token == "" {
				t.Fatalf("first page: token %q, err %v", token, err)
			}
			for _, tok := range []string{"", token} {
				queries, err := s.Collection().Plan(shardedts.Filter{Field: field, Value: value}, 7, tok)
				if err != nil {
					t.Fatal(err)
				}
				if want := (shards + shardedts.MaxIn - 1) / shardedts.MaxIn; len(queries) != want {
					t.Errorf("%d shards: %d queries, want %d", shards, len(queries), want)
				}
				for _, q := range queries {
					shape, err := indexcheck.ShapeOf(q)
					if err != nil {
						t.Fatal(err)
					}
					i := file.Serving(shape)
					if i < 0 {
						t.Errorf("no index in firestore.indexes.json serves %s", shape)
						continue
					}
					used[i] = true
				}
			}
		}
	}
	for i, ix := range file.Indexes {
		if !used[i] {
			t.Errorf("index %d (%s %v) serves no query of the code", i, ix.CollectionGroup, ix.Fields)
		}
	}
}

// TestShardAndTimestampAreNotSingleFieldIndexed checks the exemptions of
// the sharded-timestamps example: a monotonically increasing timestamp indexed on its own would
// cap the collection at ~500 writes/s, whatever the shards.
func TestShardAndTimestampAreNotSingleFieldIndexed(t *testing.T) {
	file, err := indexcheck.Load("../../firestore.indexes.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{shardedts.TimeField, shardedts.ShardField} {
		found := false
		for _, o := range file.FieldOverrides {
			if o.CollectionGroup == datamodel.Instruments && o.FieldPath == field {
				found = true
				if len(o.Indexes) != 0 {
					t.Errorf("%s.%s keeps single-field indexes %v", datamodel.Instruments, field, o.Indexes)
				}
			}
		}
		if !found {
			t.Errorf("no field override disables the single-field indexes of %s.%s", datamodel.Instruments, field)
		}
	}
}

// TestTheActivityMarkerIsShardedTimestamps: the data model spells the
// activity marker's fields itself (the core above it imports no
// Firestore client), the same as internal/shardedts's, whose index
// exemptions and queries they share.
func TestTheActivityMarkerIsShardedTimestamps(t *testing.T) {
	if datamodel.FieldActivityShard != shardedts.ShardField || datamodel.FieldActivityAt != shardedts.TimeField {
		t.Errorf("the activity marker's fields %q and %q, the sharded timestamps' %q and %q", datamodel.FieldActivityShard, datamodel.FieldActivityAt, shardedts.ShardField, shardedts.TimeField)
	}
}

package windowstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/fsmodel/fsmodeltest"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestARankingReadPastMidnightKeepsWhatTheNewDayCarried: in a zone off
// UTC's hours by half an hour, the last half hour of a day's last_day
// starts inside the day, and is listed from that day alone, by open peak.
// A request in its last moments whose read lands after midnight, behind a
// roll-up of the new day, found the peak that roll-up closed gone (its
// carry went to the new day's bucket): the counter was left out, and the
// answer said exact. On the model of Firestore, whose clock is the read's.
func TestARankingReadPastMidnightKeepsWhatTheNewDayCarried(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, kolkata) // 18:30 UTC
	var mu sync.Mutex
	clock := midnight.Add(-time.Hour)
	db := fsmodeltest.DB(t, "demo-crossing", fsmodel.New(func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }))
	set := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	cal := windows.Calendar{Zone: kolkata}
	create, rollUp := rollUpsIn(t, db, cal)
	create("likes:x")
	create("likes:y")
	set(midnight.Add(-20 * time.Minute))
	rollUp("likes:x", midnight.Add(-20*time.Minute), 5)
	rollUp("likes:y", midnight.Add(-15*time.Minute), 3)
	set(midnight.Add(50 * time.Millisecond))
	rollUp("likes:x", midnight.Add(50*time.Millisecond), 1) // the new day's first like of x
	set(midnight.Add(100 * time.Millisecond))               // the ranking's read lands

	now := midnight.Add(-50 * time.Millisecond) // the request came before midnight
	got, exact, err := windowstore.New(db, cal).RollingTop(context.Background(), windows.LastDay, now, 10, 10, "likes")
	if err != nil {
		t.Fatal(err)
	}
	if !exact || len(got) != 2 || got[0].CounterID != "likes:x" || got[1] != (windows.Ranked{CounterID: "likes:y", Count: 3}) {
		t.Errorf("last_day read past midnight: %v, exact %v; want likes:x first, then likes:y with 3, exact", got, exact)
	}
}

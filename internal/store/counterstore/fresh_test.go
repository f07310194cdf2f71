package counterstore

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/windows"
)

// TestAPageWaitsForAReadUnderWayOnlyWithinItsBound: a page that finds its
// counters' read under way in another call waits for it when it may be
// stale (FEED_CACHE above 0: the read began within the bound), and reads
// them itself when it may not (0: a read begun before the page is too
// old for it). The first call's read is held in its payment; the bubble
// says when the second has blocked or ended, with no clock to race.
func TestAPageWaitsForAReadUnderWayOnlyWithinItsBound(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "") // a model never dials one
	for _, tc := range []struct {
		within    time.Duration
		waits     bool
		readsMore int
	}{
		{within: time.Second, waits: true, readsMore: 0},
		{within: 0, waits: false, readsMore: 2},
	} {
		synctest.Test(t, func(t *testing.T) {
			db, err := fs.OnAPI(fsmodel.New(time.Now), "demo-fresh", fs.DefaultDatabase)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := New(shared.New(db, shared.Options{}), Options{ShardCountCache: 5 * time.Second, Calendar: windows.UTC})
			ids := []string{"a", "b"}
			ctx := context.Background()
			release := make(chan struct{})
			firstDone := make(chan struct{})
			go func() {
				defer close(firstDone)
				if _, _, err := s.Fresh(ctx, ids, tc.within, func(int) error { <-release; return nil }); err != nil {
					t.Error(err)
				}
			}()
			synctest.Wait() // the first call's read is under way, held
			var paid int
			secondDone := make(chan struct{})
			go func() {
				defer close(secondDone)
				if _, _, err := s.Fresh(ctx, ids, tc.within, func(n int) error { paid += n; return nil }); err != nil {
					t.Error(err)
				}
			}()
			synctest.Wait()
			select {
			case <-secondDone:
				if tc.waits {
					t.Errorf("within %s: the second call did not wait for the read under way", tc.within)
				}
			default:
				if !tc.waits {
					t.Errorf("within %s: the second call waited for a read begun before it", tc.within)
				}
			}
			close(release)
			<-firstDone
			<-secondDone
			if paid != tc.readsMore {
				t.Errorf("within %s: the second call read %d documents, want %d", tc.within, paid, tc.readsMore)
			}
		})
	}
}

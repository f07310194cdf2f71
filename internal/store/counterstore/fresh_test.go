package counterstore

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/fsmodel/fsmodeltest"
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
	for _, tc := range []struct {
		within    time.Duration
		waits     bool
		readsMore int
	}{
		{within: time.Second, waits: true, readsMore: 0},
		{within: 0, waits: false, readsMore: 2},
	} {
		synctest.Test(t, func(t *testing.T) {
			db := fsmodeltest.DB(t, "demo-fresh", fsmodel.New(time.Now))
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

// TestAPageThatWaitedTakesAReadBegunAfterIt: a page that waits for a read
// another call began after its own start takes what that read found
// (newer than it needs), and pays for no read of its own. Before, it took
// only reads begun before its start, and read a hot counter again each
// time its entry expired under many pages at once. The first page's clock
// starts the second call, whose read is held in its payment.
func TestAPageThatWaitedTakesAReadBegunAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := fsmodeltest.DB(t, "demo-fresh", fsmodel.New(time.Now))
		ctx, ids, start := context.Background(), []string{"a", "b"}, time.Now()
		inside, release, secondDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var s *Store
		var clocks atomic.Int32
		clock := func() time.Time {
			if clocks.Add(1) > 1 {
				return start.Add(time.Millisecond)
			}
			go func() { // the first page's start: another's read gets under way first
				defer close(secondDone)
				if _, _, err := s.Fresh(ctx, ids, time.Second, func(int) error { close(inside); <-release; return nil }); err != nil {
					t.Error(err)
				}
			}()
			<-inside
			return start
		}
		s = New(shared.New(db, shared.Options{Now: clock}), Options{ShardCountCache: 5 * time.Second, Calendar: windows.UTC})
		var paid int
		firstDone := make(chan struct{})
		go func() {
			defer close(firstDone)
			if _, _, err := s.Fresh(ctx, ids, time.Second, func(n int) error { paid += n; return nil }); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait() // the first page waits for the second's read
		close(release)
		<-firstDone
		<-secondDone
		if paid != 0 {
			t.Errorf("the page that waited read %d documents itself, want 0", paid)
		}
	})
}

package memberstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/internal/erasure"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/fsmodel/fsmodeltest"
	"github.com/shardcount/shardcount/internal/store/memberstore"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// held holds the first commit of a context marked late until released:
// a begin whose answer is on its way while another call begins.
type held struct {
	*fsmodel.Model
	once            sync.Once
	inside, release chan struct{}
	refuse          atomic.Bool // refuse the next commit, unapplied, as a lost precondition
}

type lateKey struct{}

func (h *held) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error) {
	if h.refuse.CompareAndSwap(true, false) {
		return nil, status.Error(codes.FailedPrecondition, "refused")
	}
	if ctx.Value(lateKey{}) != nil {
		h.once.Do(func() {
			close(h.inside)
			<-h.release
		})
	}
	return h.Model.Commit(ctx, req)
}

// TestABeginThatLostItsRaceAdoptsTheRecordThatStands: a begin that read
// no record, whose commit lands after another begin's, keeps that one's
// key (the model, not the emulator: the test holds a commit between its
// read and its landing), and its own start when it began later by the
// instances' clocks. The first to land answered its caller with tokens
// signed by its key, which stay good; each call's start holds, tokens
// issued before it refused. Replacing the record by start time voided the
// first's tokens when the late begin's clock ran ahead, or when two began
// at once and the later one landed second; keeping the first's start
// left the gap between the two starts open to the later call's promise.
func TestABeginThatLostItsRaceAdoptsTheRecordThatStands(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	first := now.Add(time.Millisecond / 2)
	for name, tc := range map[string]struct {
		late, want time.Duration // the late begin's start, and the record's, after now
	}{
		"a lost answer's begin by a clock 2 s ahead": {2 * time.Second, 2 * time.Second},
		"two begun at once, the later landing last":  {time.Millisecond, time.Millisecond},
		"begun first by its clock, landing last":     {-time.Second, time.Millisecond / 2},
	} {
		t.Run(name, func(t *testing.T) {
			h, s := heldStore(t, now)
			ctx := context.Background()
			type answer struct {
				r   erasure.Record
				err error
			}
			lateAnswer := make(chan answer)
			go func() {
				r, err := s.RecordErasure(context.WithValue(ctx, lateKey{}, true), "u1", now.Add(tc.late), now.Add(tc.late+time.Hour), []byte("late"))
				lateAnswer <- answer{r, err}
			}()
			<-h.inside // it read no record; its commit is on its way
			r, err := s.RecordErasure(ctx, "u1", first, first.Add(time.Hour), []byte("first"))
			if err != nil || string(r.Key) != "first" {
				t.Fatalf("the begin that landed first: key %q, %v", r.Key, err)
			}
			close(h.release)
			want := now.Add(tc.want)
			if got := <-lateAnswer; got.err != nil || string(got.r.Key) != "first" || !got.r.Began.Equal(want) {
				t.Errorf("the begin that landed late answered key %q began %s (%v), want the first's key, began %s", got.r.Key, got.r.Began, got.err, want)
			}
			stands, err := s.Erasure(ctx, "u1")
			if err != nil || string(stands.Key) != "first" || !stands.Began.Equal(want) {
				t.Errorf("the record that stands: key %q began %s (%v), want the first call's key, began %s", stands.Key, stands.Began, err, want)
			}
			// The first call's next page token is still good.
			tok := erasure.Cursor{Began: first, Key: []byte("first")}.Token()
			if _, err := erasure.Open(tok, "u1", func() time.Time { return now }, func() (erasure.Record, error) { return stands, nil }); err != nil {
				t.Errorf("the first call's page token: %v", err)
			}
		})
	}
}

// TestABeginRefusedOverAnUnchangedRecordReplacesIt: a commit refused
// while the record stayed as read (no begin landed: an earlier erasure's
// record) is judged by start again, and the new erasure's own key stands.
func TestABeginRefusedOverAnUnchangedRecordReplacesIt(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	h, s := heldStore(t, now)
	ctx := context.Background()
	if _, err := s.RecordErasure(ctx, "u1", now.Add(-time.Minute), now.Add(time.Hour-time.Minute), []byte("before")); err != nil {
		t.Fatal(err)
	}
	h.refuse.Store(true)
	r, err := s.RecordErasure(ctx, "u1", now, now.Add(time.Hour), []byte("again"))
	if err != nil || string(r.Key) != "again" || !r.Began.Equal(now) || h.refuse.Load() {
		t.Fatalf("begun again after a refused commit: key %q began %s (%v), refused: %v", r.Key, r.Began, err, !h.refuse.Load())
	}
	if stands, err := s.Erasure(ctx, "u1"); err != nil || string(stands.Key) != "again" {
		t.Errorf("the record that stands has key %q (%v), want the new erasure's", stands.Key, err)
	}
}

// heldStore is a member store on a model whose commits a test can hold
// (lateKey) or refuse.
func heldStore(t *testing.T, now time.Time) (*held, *memberstore.Store) {
	clock := func() time.Time { return now }
	h := &held{Model: fsmodel.New(clock), inside: make(chan struct{}), release: make(chan struct{})}
	db := fsmodeltest.DB(t, "demo-erasure", h)
	return h, memberstore.New(shared.New(db, shared.Options{Now: clock}))
}

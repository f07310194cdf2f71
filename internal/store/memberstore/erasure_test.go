package memberstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/store/memberstore"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// held holds the first commit of a context marked late until released:
// a begin whose answer is on its way while another call begins.
type held struct {
	*fsmodel.Model
	once            sync.Once
	inside, release chan struct{}
}

type lateKey struct{}

func (h *held) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error) {
	if ctx.Value(lateKey{}) != nil {
		h.once.Do(func() {
			close(h.inside)
			<-h.release
		})
	}
	return h.Model.Commit(ctx, req)
}

// TestABeginThatLostItsRaceAdoptsTheRecordThatStands: a begin that read
// no record, whose commit lands after another begin's, adopts that one's
// record, whichever began first by the instances' clocks (the model, not
// the emulator: the test holds a commit between its read and its landing).
// The first to land answered its caller with tokens signed by its key,
// which stay good. Replacing it by start time voided them when the late
// begin's instance clock ran ahead, or when two began at once and the
// later one landed second.
func TestABeginThatLostItsRaceAdoptsTheRecordThatStands(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "") // a model never dials one
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for name, late := range map[string]time.Duration{
		"a lost answer's begin by a clock 2 s ahead": 2 * time.Second,
		"two begun at once, the later landing last":  time.Millisecond,
	} {
		t.Run(name, func(t *testing.T) {
			clock := func() time.Time { return now }
			h := &held{Model: fsmodel.New(clock), inside: make(chan struct{}), release: make(chan struct{})}
			db, err := fs.OnAPI(h, "demo-erasure", fs.DefaultDatabase)
			if err != nil {
				t.Fatal(err)
			}
			s := memberstore.New(shared.New(db, shared.Options{Now: clock}))
			ctx := context.Background()
			type answer struct {
				key string
				err error
			}
			lateAnswer := make(chan answer)
			go func() {
				r, err := s.RecordErasure(context.WithValue(ctx, lateKey{}, true), "u1", now.Add(late), now.Add(late+time.Hour), []byte("late"))
				lateAnswer <- answer{string(r.Key), err}
			}()
			<-h.inside // it read no record; its commit is on its way
			first, err := s.RecordErasure(ctx, "u1", now.Add(time.Millisecond/2), now.Add(time.Hour), []byte("first"))
			if err != nil || string(first.Key) != "first" {
				t.Fatalf("the begin that landed first: key %q, %v", first.Key, err)
			}
			close(h.release)
			if got := <-lateAnswer; got.err != nil || got.key != "first" {
				t.Errorf("the begin that landed late answered key %q (%v), want the record that stood's", got.key, got.err)
			}
			if stands, err := s.Erasure(ctx, "u1"); err != nil || string(stands.Key) != "first" {
				t.Errorf("the record that stands has key %q (%v): the first call's tokens are void", stands.Key, err)
			}
		})
	}
}

package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// SetRanked says whether rankings show counter id, at once: on its
// document, and on its buckets of the windows rankings look at now (the
// current and the previous ones); later buckets take it from the roll-up.
func (s *Counters) SetRanked(ctx context.Context, id string, ranked bool) error {
	now := s.now()
	var refs []*firestore.DocumentRef
	for _, g := range windows.All {
		for _, previous := range []bool{false, true} {
			refs = append(refs, s.windowRef(id, g, windows.Window(g, now, previous)))
		}
	}
	for range 5 {
		c, err := s.Read(ctx, id)
		if err != nil {
			return err
		}
		snaps, err := s.db.getAll(ctx, refs)
		if err != nil {
			return classify(err, "read the buckets of "+id)
		}
		flag := map[string]*pb.Value{fieldRanked: boolValue(ranked)}
		writes := []*pb.Write{updateWrite(s.ref(id).Path, flag, []string{fieldRanked}, c.Version)}
		for _, snap := range snaps {
			if snap.Exists() {
				writes = append(writes, updateWrite(snap.Ref.Path, flag, []string{fieldRanked}, snap.UpdateTime))
			}
		}
		_, err = s.db.commit(ctx, writes...)
		switch code(err) {
		case codes.OK:
			c.Ranked = ranked
			s.remember(c, now)
			return nil
		case codes.FailedPrecondition, codes.NotFound:
			continue // a roll-up wrote in between: read again
		}
		return classify(err, "rank counter "+id)
	}
	return errs.Retryable(nil, time.Second, "counter %q keeps changing; retry", id)
}

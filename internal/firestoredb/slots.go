package firestoredb

import (
	"context"
	"strconv"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
)

// ClaimSlot records that holder will make sure counter id has a roll-up
// as of due or later, unless another holder did first, and returns the
// holder of the slot: holder itself if it won, or a retry of it finds its
// own claim.
func (s *Counters) ClaimSlot(ctx context.Context, id string, due time.Time, holder string) (string, error) {
	ref := s.ref(id).Collection(SlotsCollection).Doc(strconv.FormatInt(due.UnixNano(), 10))
	_, err := s.db.commit(ctx, createWrite(ref.Path, map[string]*pb.Value{
		fieldHolder: stringValue(holder), fieldExpireAt: timeValue(due.Add(time.Hour)),
	}))
	switch code(err) {
	case codes.OK:
		return holder, nil
	case codes.AlreadyExists:
		snap, err := s.db.get(ctx, ref)
		if err != nil {
			return "", classify(err, "read the roll-up slot of "+id)
		}
		owner, _ := snap.Data()[fieldHolder].(string)
		return owner, nil
	}
	return "", classify(err, "claim a roll-up slot of "+id)
}

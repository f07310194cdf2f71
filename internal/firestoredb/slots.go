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
func (s *Rollups) ClaimSlot(ctx context.Context, id string, due time.Time, holder string) (string, error) {
	name := s.slotName(id, due)
	_, err := s.db.commit(ctx, createWrite(name, map[string]*pb.Value{
		fieldHolder: stringValue(holder), fieldExpireAt: timeValue(due.Add(time.Hour)),
	}))
	switch code(err) {
	case codes.OK:
		return holder, nil
	case codes.AlreadyExists:
		d, err := s.db.get(ctx, name)
		if err != nil {
			return "", classify(err, "read the roll-up slot of "+id)
		}
		return docOf(d).str(fieldHolder), nil
	}
	return "", classify(err, "claim a roll-up slot of "+id)
}

func (s *Rollups) slotName(id string, due time.Time) string {
	return s.db.name(underCounter(id, SlotsCollection) + "/" + strconv.FormatInt(due.UnixNano(), 10))
}

// ReleaseSlot deletes the slot of counter id due at due (its holder found
// the counter gone).
func (s *Rollups) ReleaseSlot(ctx context.Context, id string, due time.Time) error {
	_, err := s.db.commit(ctx, &pb.Write{Operation: &pb.Write_Delete{Delete: s.slotName(id, due)}})
	return classify(err, "release a roll-up slot of "+id)
}

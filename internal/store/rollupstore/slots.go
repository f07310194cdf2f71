package rollupstore

import (
	"context"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
)

// ClaimSlot records that holder will make sure counter id has a roll-up
// as of due or later, unless another holder did first, and returns the
// holder of the slot: holder itself if it won, or a retry of it finds its
// own claim.
func (s *Store) ClaimSlot(ctx context.Context, id string, due time.Time, holder string) (string, error) {
	name := s.slotName(id, due)
	_, err := s.db.Commit(ctx, fs.CreateWrite(name, map[string]*pb.Value{
		dm.FieldHolder: fs.StringValue(holder), dm.FieldExpireAt: fs.TimeValue(due.Add(time.Hour)),
	}))
	switch fs.Code(err) {
	case codes.OK:
		return holder, nil
	case codes.AlreadyExists:
		d, err := s.db.Get(ctx, name)
		if err != nil {
			return "", fs.Classify(err, "read the roll-up slot of "+id)
		}
		return fs.DocOf(d).Str(dm.FieldHolder), nil
	}
	return "", fs.Classify(err, "claim a roll-up slot of "+id)
}

func (s *Store) slotName(id string, due time.Time) string { return s.db.Name(dm.Slot(id, due)) }

// ReleaseSlot deletes the slot of counter id due at due (its holder found
// the counter gone).
func (s *Store) ReleaseSlot(ctx context.Context, id string, due time.Time) error {
	_, err := s.db.Commit(ctx, fs.RemoveWrite(s.slotName(id, due)))
	return fs.Classify(err, "release a roll-up slot of "+id)
}

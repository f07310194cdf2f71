package rollupstore

import (
	"context"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/proto"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// mirrorWrite is the write of counter c's count into field of the app's
// document at path (a kind's mirror), in the roll-up's commit: nil when
// the document does not exist (the roll-up never creates one) or holds
// the count already (no write, so the app's triggers and listeners see
// changes only). The write is conditional on the document's existence: a
// deletion between the read and the commit fails the commit, whose retry
// reads again and leaves it out; a document that refuses it (at its size
// limit) leaves it out of the commit at once (WriteRollup).
//
// Of a plain, unique or distinct counter the field is the count; of a
// choice counter {count, counts: {choice: n}}.
func (s *Store) mirrorWrite(ctx context.Context, c counter.Counter, path, field string) (*pb.Write, error) {
	docs, _, err := s.db.GetAll(ctx, []string{s.db.Name(path)}, time.Time{})
	if err != nil {
		return nil, fs.Classify(err, "read "+path)
	}
	if docs[0] == nil {
		return nil, nil
	}
	value := fs.IntValue(c.Count)
	if c.Counts != nil { // a choice counter's
		value = fs.MapValue(map[string]*pb.Value{dm.FieldCount: value, dm.FieldCounts: shared.CountsValue(c.Counts)})
	}
	if proto.Equal(docs[0].GetFields()[field], value) {
		return nil, nil
	}
	return fs.PatchWrite(s.db.Name(path), map[string]*pb.Value{field: value}, []string{field}), nil
}

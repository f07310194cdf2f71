package incrementstore

import (
	"context"
	"fmt"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// members commits the ops of a counter whose users are members (unique
// and join-only counters): the member documents of its users, read before
// each plan, created or deleted in the commit that counts them.
type members struct{ s *Store }

func (m *members) known(_ counter.Counter, ops []increment.Op) (map[int]int, []int) {
	return noneKnown(ops)
}
func (m *members) shard(c counter.Counter, _ []increment.Op) int { return m.s.anyShard(c) }
func (m *members) read(ctx context.Context, b *increment.Batch) (map[string]increment.Membership, error) {
	return m.s.readMembers(ctx, b)
}
func (m *members) unchanged(plan increment.Plan) bool { return plan.Empty() }
func (m *members) shardWrites(b *increment.Batch, change shared.ShardChange) (*pb.Write, []*pb.Write) {
	return m.s.base.ShardWrite(b.Counter.ID, b.Shard, change), nil
}
func (m *members) lastWrites(*increment.Batch) []*pb.Write { return nil }
func (m *members) landed(b *increment.Batch, plan increment.Plan, resp *pb.CommitResponse) error {
	if _, _, err := saturated(b, plan, resp); err != nil {
		return err
	}
	b.Committed(plan)
	return nil
}
func (m *members) raced(*increment.Batch) {}
func (m *members) recordFields(r increment.Record) map[string]*pb.Value {
	return map[string]*pb.Value{dm.FieldMember: fs.BoolValue(r.Member), dm.FieldChanged: fs.BoolValue(r.Changed)}
}

// choices commits the ops of a choice counter: as members', and a key's
// record keeps the choice it set and the one before.
type choices struct{ members }

func (c *choices) recordFields(r increment.Record) map[string]*pb.Value {
	fields := c.members.recordFields(r)
	fields[dm.FieldChoice], fields[dm.FieldPrevious] = fs.StringValue(r.Choice), fs.StringValue(r.Previous)
	return fields
}

// readMembers reads the member documents of the users of the pending ops.
func (s *Store) readMembers(ctx context.Context, b *increment.Batch) (map[string]increment.Membership, error) {
	users := b.Users()
	names := make([]string, len(users))
	for i, u := range users {
		if err := counter.ValidateMemberID(u); err != nil {
			return nil, err // the handlers refuse such ops; this is a bug
		}
		names[i] = s.db.Name(dm.Member(b.Counter.ID, u))
	}
	docs, _, err := s.db.GetAll(ctx, names, time.Time{})
	if err != nil {
		return nil, fs.Classify(err, "read the members of "+b.Counter.ID)
	}
	out := map[string]increment.Membership{}
	for i, pd := range docs {
		m := increment.Membership{Member: pd != nil}
		if pd != nil {
			m.Version = pd.GetUpdateTime().AsTime()
			d := fs.DocOf(pd)
			if m.Choice = d.Str(dm.FieldChoice); d.Err() != nil {
				return nil, fmt.Errorf("incrementstore: decode %s: %w", pd.GetName(), d.Err())
			}
		}
		out[users[i]] = m
	}
	return out, nil
}

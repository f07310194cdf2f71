package firestoredb

import (
	"context"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/errs"
)

// A counter of a declared kind (Options.Kinds) comes into being with its
// first increment or like: the commit that counts it also creates its
// document, on the condition that it does not exist. Of first uses racing
// on several instances one creates it; the others find it there, read it,
// and commit again as for any counter.

// notRolledUp is the rollup_as_of of a counter its first use created: its
// first roll-up, a cadence later, sets the real one.
var notRolledUp = time.Unix(0, 0).UTC()

// creates reports whether the next commit creates the counter: its
// document was absent when read (liveOrNew's zero Version).
func (p *incrementCommit) creates() bool { return p.c.Version.IsZero() }

// withCreation adds the counter's creation to a commit that writes
// anything under it (after the other writes: the shard's is the first).
func (p *incrementCommit) withCreation(writes []*pb.Write) []*pb.Write {
	if !p.creates() || len(writes) == 0 {
		return writes
	}
	// Its roll-up holds nothing yet: as of the epoch, not of this commit,
	// whose own shard write the count 0 leaves out (data-model.md: every
	// write at or before rollup_as_of is in count).
	fields := counterFields(p.c)
	fields[fieldAsOf] = timeValue(notRolledUp)
	w := createWrite(p.s.counterName(p.c.ID), fields)
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{serverTime(fieldCreatedAt)}
	return append(writes, w)
}

// created settles a commit, sent at sent, that created the counter: this
// instance knows it from then on (not from the answer, which may come a
// deadline later: the cache must not outlive what deletions allow for).
func (p *incrementCommit) created(resp *pb.CommitResponse, sent time.Time) {
	if !p.creates() || resp == nil {
		return
	}
	c := p.c
	at := resp.GetCommitTime().AsTime()
	c.AsOf, c.CreatedAt, c.Version = notRolledUp, at, versionOf(resp, len(resp.GetWriteResults())-1)
	p.c = c
	p.s.remember(c, sent)
}

// reread follows a lost race of a creating commit: the counter was
// probably created meanwhile; read it, and go on as with any counter. One
// deleted meanwhile is NOT_FOUND.
func (p *incrementCommit) reread(ctx context.Context) error {
	if !p.creates() {
		return nil
	}
	c, err := p.s.stored(ctx, p.c.ID)
	switch {
	case errs.Is(err, errs.NotFound):
		return nil // still absent (dropped meanwhile): create it again
	case err != nil:
		return err
	case c.IsDeleted():
		return notFound(p.c.ID)
	}
	if c.NumShards != p.c.NumShards {
		p.shard = p.s.intn(c.ID, c.NumShards) // created with other settings (by an admin)
	}
	p.c = c
	return nil
}

package counterstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/retry"
	"github.com/shardcount/shardcount/internal/windows"
)

// Create creates counter c.ID with c.NumShards shards, c.Owner, c.Mode
// (and c.Choices), c.Kind, c.Origin and c.Ranked. It writes one document whatever the shard count:
// shards appear when the first increment lands on them. The id of a
// deleted counter is free again once its late writes can no longer land
// (freeTombstone); documents left under an id whose counter document was
// deleted by hand are first made a tombstone and purged, so a new counter
// never counts an old one's shards, and a creation that loses a race
// never deletes the winner's.
func (s *Store) Create(ctx context.Context, c counter.Counter) (counter.Counter, error) {
	name := s.name(dm.Counter(c.ID))
	err := retry.Raced(fmt.Sprintf("counter %q", c.ID), func(int) (bool, error) {
		old, err := s.Stored(ctx, c.ID)
		if errs.Is(err, errs.NotFound) {
			old, err = s.adoptOrphans(ctx, c.ID)
		}
		w := fs.CreateWrite(name, fields(c))
		switch {
		case errors.Is(err, errReplaced):
			return true, nil // the id's document changed meanwhile: read it again
		case err != nil:
			return false, err
		case old.ID == "": // nothing under the id
		case !old.IsDeleted():
			return false, errs.New(errs.AlreadyExists, "counter %q already exists", c.ID)
		default:
			version, err := s.freeTombstone(ctx, old)
			if errors.Is(err, errReplaced) {
				return true, nil // created, or the tombstone dropped, meanwhile
			}
			if err != nil {
				return false, err
			}
			w = fs.ReplaceWrite(name, fields(c), version)
		}
		w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldAsOf), fs.ServerTime(dm.FieldCreatedAt)}
		sent := s.base.Now() // the cache's life starts with the commit, not its answer
		resp, err := s.db.Commit(ctx, w)
		switch fs.Code(err) {
		case codes.OK:
			// The times as stored (the request's time, in milliseconds; not
			// the commit's): a read of the document later finds the same
			// counter.
			r := resp.GetWriteResults()[0].GetTransformResults()
			c.Count, c.Version, c.Peaks = 0, fs.VersionOf(resp, 0), map[windows.Granularity]windows.Peak{}
			c.AsOf, c.CreatedAt = r[0].GetTimestampValue().AsTime(), r[1].GetTimestampValue().AsTime()
			s.Remember(c, sent)
			return false, nil
		case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
			// Created, or the tombstone purged on or dropped, meanwhile:
			// only a read says whether the id is taken.
			return true, nil
		}
		return false, fs.Classify(err, "create counter "+c.ID)
	})
	if err != nil {
		return counter.Counter{}, err
	}
	return c, nil
}

// NotRolledUp is the rollup_as_of of a counter its first use created: its
// first roll-up, a cadence later, sets the real one.
var NotRolledUp = time.Unix(0, 0).UTC()

// FirstUseWrite creates counter c, of a kind, in the commit of its first
// use, on the condition that it does not exist. Of first uses racing on
// several instances one creates it; the others find it there, read it,
// and commit again as for any counter. Its roll-up holds nothing yet: as
// of the epoch, not of this commit, whose own shard write the count 0
// leaves out (data-model.md: every write at or before rollup_as_of is in
// count).
func (s *Store) FirstUseWrite(c counter.Counter) *pb.Write {
	f := fields(c)
	f[dm.FieldAsOf] = fs.TimeValue(NotRolledUp)
	w := fs.CreateWrite(s.name(dm.Counter(c.ID)), f)
	w.UpdateTransforms = []*pb.DocumentTransform_FieldTransform{fs.ServerTime(dm.FieldCreatedAt)}
	return w
}

// FirstUsed returns counter c as the commit resp, sent at sent, created it
// with FirstUseWrite (its write at index write), and remembers it from
// then on (not from the answer, which may come a deadline later: the cache
// must not outlive what deletions allow for).
func (s *Store) FirstUsed(c counter.Counter, resp *pb.CommitResponse, write int, sent time.Time) counter.Counter {
	// created_at as stored: the request's time, in milliseconds, not the
	// commit's.
	createdAt := resp.GetWriteResults()[write].GetTransformResults()[0].GetTimestampValue().AsTime()
	c.AsOf, c.CreatedAt, c.Version, c.Peaks = NotRolledUp, createdAt, fs.VersionOf(resp, write), map[windows.Granularity]windows.Peak{}
	s.Remember(c, sent)
	return c
}

// adoptOrphans looks for documents under an id with no counter document
// (deleted by hand, or left by a purge's last roll-up): if there are any,
// it makes the id a tombstone, free at once, which Create purges like any
// other. A creation of the id meanwhile is errReplaced: the orphans may be
// the new counter's documents. Nothing under the id: a zero Counter.
func (s *Store) adoptOrphans(ctx context.Context, id string) (counter.Counter, error) {
	colls, err := s.subcollections(ctx, id)
	if err != nil || len(colls) == 0 {
		return counter.Counter{}, err
	}
	now := s.base.Now().Truncate(time.Microsecond) // as Firestore keeps it
	tomb := counter.Counter{ID: id, NumShards: counter.MinShards, Deleted: counter.Deletion{At: now, PurgeAfter: now}}
	resp, err := s.db.Commit(ctx, fs.CreateWrite(s.name(dm.Counter(id)), map[string]*pb.Value{
		dm.FieldNumShards: fs.IntValue(int64(tomb.NumShards)), dm.FieldCount: fs.IntValue(0),
		dm.FieldDeleted: fs.BoolValue(true), dm.FieldDeletedAt: fs.TimeValue(now), dm.FieldPurgeAfter: fs.TimeValue(now),
	}))
	switch fs.Code(err) {
	case codes.OK:
		tomb.Version = fs.VersionOf(resp, 0)
		return tomb, nil
	case codes.AlreadyExists:
		return counter.Counter{}, errReplaced // created meanwhile: Create reads it again
	}
	return counter.Counter{}, fs.Classify(err, "adopt the documents under "+id)
}

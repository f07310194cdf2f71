package firestoredb

import (
	"context"
	"errors"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// Counters are the counter documents and their lifecycle.
type Counters struct{ *base }

// Live reads a counter's document now: NOT_FOUND if it does not exist or
// is deleted.
func (s *Counters) Live(ctx context.Context, id string) (counter.Counter, error) {
	return s.live(ctx, id)
}

// LiveCached returns a live counter's document as this instance
// remembers it (for SHARD_COUNT_CACHE), reading it when it does not.
func (s *Counters) LiveCached(ctx context.Context, id string) (counter.Counter, error) {
	return s.liveCached(ctx, id)
}

// LiveOrNew is Live, but for an absent counter of a declared kind: the
// counter its first increment creates, with a zero Version (it does not
// exist yet, and reads as 0). A deleted one stays NOT_FOUND.
func (s *Counters) LiveOrNew(ctx context.Context, id string) (counter.Counter, error) {
	return s.liveOrNew(ctx, id, false)
}

// LiveOrNewCached is LiveOrNew from this instance's cache
// (SHARD_COUNT_CACHE), as increments read counters.
func (s *Counters) LiveOrNewCached(ctx context.Context, id string) (counter.Counter, error) {
	return s.liveOrNew(ctx, id, true)
}

// AppDocumentExists reads a document of the app's, at path, now: whether
// it exists (a kind's keys_in).
func (s *Counters) AppDocumentExists(ctx context.Context, path string) (bool, error) {
	doc, err := s.db.get(ctx, s.db.name(path))
	if err != nil {
		return false, classify(err, "read "+path)
	}
	return doc != nil, nil
}

// Stored reads a counter's document now, a deleted counter's tombstone
// included (IsDeleted).
func (s *Counters) Stored(ctx context.Context, id string) (counter.Counter, error) {
	return s.stored(ctx, id)
}

// Strong returns a live counter's document and its exact value, a SUM
// over its shards, at the same read time, which it returns: a counter
// deleted by then is NOT_FOUND, whatever this instance remembers of it.
func (s *Counters) Strong(ctx context.Context, id string) (counter.Counter, int64, time.Time, error) {
	c, at, err := s.storedAt(ctx, id)
	if kind, ok := s.opts.Kinds.Of(id); ok && errs.Is(err, errs.NotFound) {
		return kind.Counter(id), 0, at, nil // not used yet: 0
	}
	if err == nil && c.IsDeleted() {
		err = notFound(id)
	}
	if err != nil {
		return counter.Counter{}, 0, time.Time{}, err
	}
	total, at, err := s.sum(ctx, id, at)
	if err != nil {
		return counter.Counter{}, 0, time.Time{}, err
	}
	return c, total, at, nil
}

// Create creates counter c.ID with c.NumShards shards, c.Owner, c.Unique,
// c.Origin and c.Ranked. It writes one document whatever the shard count:
// shards appear when the first increment lands on them. The id of a
// deleted counter is free again once its late writes can no longer land
// (freeTombstone); documents left under an id whose counter document was
// deleted by hand are first made a tombstone and purged, so a new counter
// never counts an old one's shards, and a creation that loses a race
// never deletes the winner's.
func (s *Counters) Create(ctx context.Context, c counter.Counter) (counter.Counter, error) {
	fields := counterFields(c)
	name := s.counterName(c.ID)
	for range maxVersionAttempts {
		old, err := s.stored(ctx, c.ID)
		if errs.Is(err, errs.NotFound) {
			old, err = s.adoptOrphans(ctx, c.ID)
		}
		w := createWrite(name, fields)
		switch {
		case errors.Is(err, errReplaced):
			continue // the id's document changed meanwhile: read it again
		case err != nil:
			return counter.Counter{}, err
		case old.ID == "": // nothing under the id
		case !old.IsDeleted():
			return counter.Counter{}, errs.New(errs.AlreadyExists, "counter %q already exists", c.ID)
		default:
			version, err := s.freeTombstone(ctx, old)
			if errors.Is(err, errReplaced) {
				continue // created, or the tombstone dropped, meanwhile
			}
			if err != nil {
				return counter.Counter{}, err
			}
			w = replaceWrite(name, fields, version)
		}
		w.UpdateTransforms = createdTransforms()
		sent := s.now() // the cache's life starts with the commit, not its answer
		resp, err := s.db.commit(ctx, w)
		switch code(err) {
		case codes.OK:
			at := resp.GetCommitTime().AsTime()
			c.Count, c.AsOf, c.Version, c.CreatedAt = 0, at, at, at
			s.remember(c, sent)
			return c, nil
		case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
			// Created, or the tombstone purged on or dropped, meanwhile:
			// only a read says whether the id is taken.
			continue
		default:
			return counter.Counter{}, classify(err, "create counter "+c.ID)
		}
	}
	return counter.Counter{}, errs.Retryable(nil, retryAfter, "counter %q keeps changing; retry", c.ID)
}

// counterFields are a new counter's document: c's settings, count 0.
func counterFields(c counter.Counter) map[string]*pb.Value {
	fields := map[string]*pb.Value{
		fieldNumShards: intValue(int64(c.NumShards)),
		fieldCount:     intValue(0),
		fieldRollups:   intValue(0),
		fieldOwner:     stringValue(c.Owner),
		fieldUnique:    boolValue(c.Unique),
		fieldOrigin:    stringValue(string(c.Origin)),
		fieldRanked:    boolValue(c.Ranked),
	}
	if c.Kind != "" {
		fields[fieldKind] = stringValue(c.Kind)
	}
	return fields
}

// createdTransforms set a new counter's rollup_as_of and created_at to
// its commit's time.
func createdTransforms() []*pb.DocumentTransform_FieldTransform {
	return []*pb.DocumentTransform_FieldTransform{serverTime(fieldAsOf), serverTime(fieldCreatedAt)}
}

// decodeCounter reads a counter document, refusing one the functions
// cannot have written (DATA_LOSS): everything downstream trusts it.
func decodeCounter(pd *pb.Document) (counter.Counter, error) {
	d := docOf(pd)
	r := d.sub(fieldReshard)
	c := counter.Counter{
		ID: d.id, NumShards: int(d.integer(fieldNumShards)), Count: d.integer(fieldCount), AsOf: d.time(fieldAsOf), Version: d.updated,
		Sums:      counter.Sums{Count: d.integer(fieldCount), Commits: d.integer(fieldShardCommits), Slow: d.integer(fieldSlowCommits)},
		WriteRate: d.float(fieldWriteRate), ActivityAsOf: d.time(fieldActivityAsOf),
		Reshard: counter.Reshard{From: int(r.integer("from")), To: int(r.integer("to")), At: r.time("at"),
			MergeUntil: r.time("merge_until"), MergedAt: r.time("merged_at"), Reason: r.str("reason")},
		Owner: d.str(fieldOwner), Unique: d.boolean(fieldUnique), CreatedAt: d.time(fieldCreatedAt),
		Origin: counter.Origin(d.str(fieldOrigin)), Kind: d.str(fieldKind), Ranked: d.boolean(fieldRanked), ResetAt: d.time(fieldResetAt),
		Deleted: counter.Deletion{At: d.time(fieldDeletedAt), PurgeAfter: d.time(fieldPurgeAfter), Purged: d.integer(fieldPurged)},
	}
	if err := d.done(r); err != nil {
		return counter.Counter{}, errs.Wrap(errs.DataLoss, err, "counter %q has a malformed document", d.id)
	}
	if c.Origin == "" {
		// Before origins, a counter without an owner was an admin's, and
		// only an admin's counters are ranked unless an admin says so.
		c.Legacy, c.Origin = true, counter.ByUser
		if c.Owner == "" {
			c.Origin = counter.ByAdmin
		}
		c.Ranked = c.Origin == counter.ByAdmin
	}
	if c.NumShards < counter.MinShards || c.NumShards > counter.MaxShards {
		return counter.Counter{}, errs.New(errs.DataLoss, "counter %q has num_shards %d, not %d to %d: its document was written outside the functions",
			d.id, c.NumShards, counter.MinShards, counter.MaxShards)
	}
	return c, nil
}

func reshardValue(r counter.Reshard) *pb.Value {
	fields := map[string]*pb.Value{
		"from": intValue(int64(r.From)), "to": intValue(int64(r.To)),
		"at": timeValue(r.At), "reason": stringValue(r.Reason),
	}
	if !r.MergeUntil.IsZero() {
		fields["merge_until"] = timeValue(r.MergeUntil)
	}
	if !r.MergedAt.IsZero() {
		fields["merged_at"] = timeValue(r.MergedAt)
	}
	return mapValue(fields)
}

func serverTime(field string) *pb.DocumentTransform_FieldTransform {
	return &pb.DocumentTransform_FieldTransform{FieldPath: field,
		TransformType: &pb.DocumentTransform_FieldTransform_SetToServerValue{SetToServerValue: pb.DocumentTransform_FieldTransform_REQUEST_TIME}}
}

// List returns up to limit live counters after the id after, in id order:
// those of owner, or every counter when all is set. The last id read is
// the next page's after ("" when there is no next page): tombstones are
// skipped, so a page may hold fewer than limit.
func (s *Counters) List(ctx context.Context, owner string, all bool, after string, limit int) ([]counter.Counter, string, error) {
	docs, err := s.db.query(ctx, s.ListQuery(owner, all, after, limit))
	if err != nil {
		return nil, "", classify(err, "list counters")
	}
	var out []counter.Counter
	for _, d := range docs {
		c, err := decodeCounter(d)
		if err != nil || c.IsDeleted() {
			continue // a corrupt document is DATA_LOSS for its own requests
		}
		out = append(out, c)
	}
	next := ""
	if len(docs) == limit {
		next = docOf(docs[len(docs)-1]).id
	}
	return out, next, nil
}

// ListQuery is List's query, for the index check.
func (s *Counters) ListQuery(owner string, all bool, after string, limit int) firestore.Query {
	q := s.db.client.Collection(CountersCollection).Query
	if !all {
		q = q.Where(fieldOwner, "==", owner)
	}
	q = q.OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return q
}

// SetRanked says whether rankings show counter id, at once: on its
// document, and on its buckets of the windows rankings look at now (the
// current and the previous ones); later buckets take it from the roll-up.
func (s *Counters) SetRanked(ctx context.Context, id string, ranked bool) error {
	now := s.now()
	var names []string
	for _, g := range windows.All {
		for _, previous := range []bool{false, true} {
			names = append(names, s.windowName(id, g, windows.Window(g, now, previous)))
		}
	}
	flag := map[string]*pb.Value{fieldRanked: boolValue(ranked)}
	c, resp, err := s.update(ctx, id, false, "rank counter", func(c counter.Counter, _ time.Time) ([]*pb.Write, error) {
		buckets, _, err := s.db.getAt(ctx, names, time.Time{})
		if err != nil {
			return nil, classify(err, "read the buckets of "+id)
		}
		writes := []*pb.Write{updateWrite(s.counterName(id), flag, []string{fieldRanked}, c.Version)}
		for _, b := range buckets {
			if b != nil {
				writes = append(writes, updateWrite(b.GetName(), flag, []string{fieldRanked}, b.GetUpdateTime().AsTime()))
			}
		}
		return writes, nil
	})
	if err != nil {
		return err
	}
	c.Ranked, c.Version = ranked, versionOf(resp, 0)
	s.remember(c, now)
	return nil
}

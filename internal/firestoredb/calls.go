package firestoredb

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
)

// Commit applies writes atomically in one round trip, never retried. The
// firestore package offers this only through the deprecated WriteBatch or
// a transaction (two round trips), hence the raw call. Errors are raw gRPC
// errors: callers look at AlreadyExists and FailedPrecondition, then
// classify.
func (db *DB) Commit(ctx context.Context, writes ...*pb.Write) (*pb.CommitResponse, error) {
	ops := db.ops(ctx)
	ops.Commits.Add(1)
	ctx, span := startCommit(ctx, len(writes))
	resp, err := db.api.Commit(ctx, &pb.CommitRequest{Database: db.database, Writes: writes})
	endCall(span, err)
	if err != nil {
		ops.FailedCommits.Add(1)
		return nil, err
	}
	ops.Writes.Add(int64(len(writes)))
	for _, w := range writes {
		ops.WrittenBytes.Add(int64(proto.Size(w)))
	}
	return resp, nil
}

// GetAll reads documents by name in one round trip, at readTime (zero:
// now), in the order of names; a missing one is nil. It returns the read
// time. Firestore bills each one as a read.
func (db *DB) GetAll(ctx context.Context, names []string, readTime time.Time) ([]*pb.Document, time.Time, error) {
	db.read(ctx, len(names))
	req := &pb.BatchGetDocumentsRequest{Database: db.database, Documents: names}
	if !readTime.IsZero() {
		req.ConsistencySelector = &pb.BatchGetDocumentsRequest_ReadTime{ReadTime: timestamppb.New(readTime)}
	}
	resps, err := db.api.BatchGetDocuments(ctx, req)
	if err != nil {
		return nil, time.Time{}, err
	}
	byName := map[string]*pb.Document{}
	var at time.Time
	for _, r := range resps {
		if d := r.GetFound(); d != nil {
			byName[d.GetName()] = d
		}
		// Each answer's document is unchanged up to every later answer's
		// read time: the snapshot of them all is at the latest.
		if t := r.GetReadTime(); t != nil && t.AsTime().After(at) {
			at = t.AsTime()
		}
	}
	out := make([]*pb.Document, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, at, nil
}

// Get reads one document now; nil when it does not exist.
func (db *DB) Get(ctx context.Context, name string) (*pb.Document, error) {
	docs, _, err := db.GetAll(ctx, []string{name}, time.Time{})
	if err != nil {
		return nil, err
	}
	return docs[0], nil
}

// Query runs a query now and counts the documents it returns (Firestore
// bills at least one read per query).
func (db *DB) Query(ctx context.Context, q firestore.Query) ([]*pb.Document, error) {
	docs, _, err := db.QueryAt(ctx, q, time.Time{})
	return docs, err
}

// QueryAt runs a query at read time at (zero: now), as Query does, and
// returns the read time of its snapshot too: queries run at one read time
// see one state of the database.
func (db *DB) QueryAt(ctx context.Context, q firestore.Query, at time.Time) ([]*pb.Document, time.Time, error) {
	req, err := runQueryRequest(q)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !at.IsZero() {
		req.ConsistencySelector = &pb.RunQueryRequest_ReadTime{ReadTime: timestamppb.New(at)}
	}
	resps, err := db.api.RunQuery(ctx, req)
	var docs []*pb.Document
	readTime := at
	for _, r := range resps {
		if d := r.GetDocument(); d != nil {
			docs = append(docs, d)
		}
		if t := r.GetReadTime(); t != nil && at.IsZero() {
			readTime = t.AsTime()
		}
	}
	db.read(ctx, max(1, len(docs)))
	return docs, readTime, err
}

// Snapshots runs a query through the high-level client, which the
// instruments example's sharded timestamps page with; the counters' stores
// query through Firestore (query).
func (db *DB) Snapshots(ctx context.Context, q firestore.Query) ([]*firestore.DocumentSnapshot, error) {
	docs, err := q.Documents(ctx).GetAll()
	db.read(ctx, max(1, len(docs)))
	return docs, err
}

// runQueryRequest is the request q sends.
func runQueryRequest(q firestore.Query) (*pb.RunQueryRequest, error) {
	b, err := q.Serialize()
	if err != nil {
		return nil, err
	}
	var req pb.RunQueryRequest
	return &req, proto.Unmarshal(b, &req)
}

// CollectionIDs lists the ids of the collections under the document name.
func (db *DB) CollectionIDs(ctx context.Context, name string) ([]string, error) {
	db.read(ctx, 1)
	return db.api.ListCollectionIds(ctx, &pb.ListCollectionIdsRequest{Parent: name})
}

// Sum returns the sums of integer fields over every document of the
// collection path (e.g. "counters/c1/shards"), in fields' order, at read
// time at (zero: now), and the read time of the snapshot: every write committed at or before it is
// included, none after. A query with several aggregations counts only the
// documents that hold every field aggregated. Firestore bills one read per
// 1,000 index entries scanned.
func (db *DB) Sum(ctx context.Context, collection string, at time.Time, fields ...string) ([]int64, time.Time, error) {
	aggs := make([]*pb.StructuredAggregationQuery_Aggregation, len(fields))
	for i, f := range fields {
		aggs[i] = sumAgg(fmt.Sprintf("s%d", i), f)
	}
	result, readTime, err := db.aggregate(ctx, collection, aggs, at)
	if err != nil {
		return nil, time.Time{}, err
	}
	out := make([]int64, len(fields))
	for i := range fields {
		n, err := integer(result[fmt.Sprintf("s%d", i)])
		if err != nil {
			// Permanent: the same shards sum the same way on a retry.
			return nil, time.Time{}, errs.Wrap(errs.DataLoss, err, "the %s of %s sum past int64: shards were written outside the functions", fields[i], collection)
		}
		out[i] = n
	}
	return out, readTime, nil
}

// Count returns how many documents the collection path holds at read time
// at (zero: now), and the read time (Firestore keeps an hour of versions).
func (db *DB) Count(ctx context.Context, collection string, at time.Time) (int64, time.Time, error) {
	result, readTime, err := db.aggregate(ctx, collection, []*pb.StructuredAggregationQuery_Aggregation{countAgg()}, at)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, err := integer(result["n"])
	db.countScanned(ctx, n)
	return n, readTime, err
}

// CountOf returns how many documents query q holds at read time at
// (zero: now): one aggregation, billed a read per 1,000 documents.
func (db *DB) CountOf(ctx context.Context, q firestore.Query, at time.Time) (int64, error) {
	n, err := db.aggregateQuery(ctx, q, countAgg(), at)
	db.countScanned(ctx, n)
	return n, err
}

// countScanned books the reads past the first that a count of n
// documents is billed: one per 1,000 index entries scanned. (A sum is
// over a counter's shards or a window's buckets, 1,000 at most: one.)
func (db *DB) countScanned(ctx context.Context, n int64) {
	if n > 1000 {
		db.read(ctx, int(min((n-1)/1000, math.MaxInt32)))
	}
}

// SumOf returns the SUM of an integer field over the documents of query q,
// at read time at (zero: now): one aggregation.
func (db *DB) SumOf(ctx context.Context, q firestore.Query, field string, at time.Time) (int64, error) {
	return db.aggregateQuery(ctx, q, sumAgg("n", field), at)
}

// aggregateQuery runs one aggregation, aliased n, over query q.
func (db *DB) aggregateQuery(ctx context.Context, q firestore.Query, agg *pb.StructuredAggregationQuery_Aggregation, at time.Time) (int64, error) {
	req, err := runQueryRequest(q)
	if err != nil {
		return 0, err
	}
	result, _, err := db.runAggregation(ctx, req.GetParent(), req.GetStructuredQuery(), []*pb.StructuredAggregationQuery_Aggregation{agg}, at)
	if err != nil {
		return 0, err
	}
	return integer(result["n"])
}

func countAgg() *pb.StructuredAggregationQuery_Aggregation {
	return &pb.StructuredAggregationQuery_Aggregation{Alias: "n",
		Operator: &pb.StructuredAggregationQuery_Aggregation_Count_{Count: &pb.StructuredAggregationQuery_Aggregation_Count{}}}
}

func sumAgg(alias, field string) *pb.StructuredAggregationQuery_Aggregation {
	return &pb.StructuredAggregationQuery_Aggregation{Alias: alias, Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{
		Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{Field: &pb.StructuredQuery_FieldReference{FieldPath: field}}}}
}

// aggregate runs aggregations over every document of the collection path,
// at read time at (zero: now), and returns their results by alias and the
// read time.
func (db *DB) aggregate(ctx context.Context, collection string, aggs []*pb.StructuredAggregationQuery_Aggregation, at time.Time) (map[string]*pb.Value, time.Time, error) {
	parent, id := db.database+"/documents", collection
	if i := strings.LastIndex(collection, "/"); i >= 0 {
		parent, id = db.Name(collection[:i]), collection[i+1:]
	}
	return db.runAggregation(ctx, parent, &pb.StructuredQuery{From: []*pb.StructuredQuery_CollectionSelector{{CollectionId: id}}}, aggs, at)
}

// runAggregation runs aggregations over the documents of a structured
// Query under parent, at read time at (zero: now), and returns their
// results by alias and the read time.
func (db *DB) runAggregation(ctx context.Context, parent string, q *pb.StructuredQuery, aggs []*pb.StructuredAggregationQuery_Aggregation, at time.Time) (map[string]*pb.Value, time.Time, error) {
	db.ops(ctx).Aggregations.Add(1)
	ledger.Read(ctx, 1)
	req := &pb.RunAggregationQueryRequest{
		Parent: parent,
		QueryType: &pb.RunAggregationQueryRequest_StructuredAggregationQuery{
			StructuredAggregationQuery: &pb.StructuredAggregationQuery{
				QueryType:    &pb.StructuredAggregationQuery_StructuredQuery{StructuredQuery: q},
				Aggregations: aggs,
			},
		},
	}
	if !at.IsZero() {
		req.ConsistencySelector = &pb.RunAggregationQueryRequest_ReadTime{ReadTime: timestamppb.New(at)}
	}
	resps, err := db.api.RunAggregationQuery(ctx, req)
	if err != nil {
		return nil, time.Time{}, err
	}
	var (
		result   map[string]*pb.Value
		readTime time.Time
	)
	for _, res := range resps {
		if res.GetResult() != nil {
			result = res.GetResult().GetAggregateFields()
		}
		if res.GetReadTime() != nil {
			readTime = res.GetReadTime().AsTime()
		}
	}
	if result == nil || readTime.IsZero() {
		return nil, time.Time{}, fmt.Errorf("firestoredb: aggregate under %s: empty response", parent)
	}
	return result, readTime, nil
}

func integer(v *pb.Value) (int64, error) {
	switch v := v.GetValueType().(type) {
	case *pb.Value_IntegerValue:
		return v.IntegerValue, nil
	case *pb.Value_DoubleValue:
		// Firestore switches to a double when a sum overflows int64; a
		// double is never exact there, even when it looks integral.
		return 0, fmt.Errorf("a double (%g): overflows int64", v.DoubleValue)
	case *pb.Value_NullValue, nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected value %v", v)
}

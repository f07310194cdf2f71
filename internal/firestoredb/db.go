// Package firestoredb is the project's only access to Firestore: opening
// clients for production or the emulator, one-round-trip commits that are
// never retried blindly, reads and queries at a read time, SUM and COUNT
// aggregations with their read time, and the stores of counters and
// instruments built on them.
//
// The counters store talks to Firestore through one narrow interface,
// Firestore (api.go), so the same code runs on the model the simulation
// uses (internal/fsmodel).
//
// Every error it returns is classified (internal/errs): a failure a retry
// can fix is UNAVAILABLE with a Retry-After, NOT_FOUND and ALREADY_EXISTS
// mean what they say, anything else is internal. Callers never look at
// gRPC codes.
//
// Every commit, document read and aggregation is counted where it happens,
// under the label of its context (WithLabel), so costs are measured, not
// computed (Stats).
package firestoredb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	vkit "cloud.google.com/go/firestore/apiv1"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
)

// DB holds the Firestore access of one process.
type DB struct {
	api Firestore
	// client builds queries and document names, and serves the
	// instruments example's queries.
	client *firestore.Client
	// database is "projects/P/databases/D".
	database string
	closers  []func() error

	statsMu sync.Mutex
	stats   map[string]*Ops
}

// DefaultDatabase is Firestore's (default) database.
const DefaultDatabase = "(default)"

// Open connects to database (DefaultDatabase, or a named one) of Firestore.
// projectID may be empty to detect it from the runtime credentials. With
// emulatorHost set (FIRESTORE_EMULATOR_HOST), both clients talk to the
// emulator as an owner, bypassing security rules.
func Open(ctx context.Context, projectID, database, emulatorHost string) (*DB, error) {
	if projectID == "" {
		projectID = firestore.DetectProjectID
	}
	opts := []option.ClientOption{option.WithGRPCDialOption(reconnect)}
	if emulatorHost != "" {
		// Both clients on this connection, whatever the process's own
		// FIRESTORE_EMULATOR_HOST says.
		conn, err := grpc.NewClient("passthrough:///"+emulatorHost, reconnect,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(ownerCredentials{}))
		if err != nil {
			return nil, fmt.Errorf("firestoredb: dial emulator %s: %w", emulatorHost, err)
		}
		opts = []option.ClientOption{option.WithGRPCConn(conn), option.WithoutAuthentication()}
	}
	client, err := firestore.NewClientWithDatabase(ctx, projectID, database, opts...)
	if err != nil {
		return nil, fmt.Errorf("firestoredb: open client: %w", err)
	}
	raw, err := vkit.NewClient(ctx, opts...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("firestoredb: open raw client: %w", err)
	}
	db := newDB(client, func(database string) Firestore { return grpcFirestore{raw: raw, database: database} })
	db.closers = []func() error{client.Close, raw.Close}
	return db, nil
}

// OnAPI returns a DB of database of projectID served by api, with no
// network: the simulation's, on the model of internal/fsmodel.
func OnAPI(api Firestore, projectID, database string) (*DB, error) {
	// A client that never dials: it only builds queries and names.
	conn, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	client, err := firestore.NewClientWithDatabase(context.Background(), projectID, database, option.WithGRPCConn(conn), option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	db := newDB(client, func(string) Firestore { return api })
	db.closers = []func() error{client.Close}
	return db, nil
}

func newDB(client *firestore.Client, api func(database string) Firestore) *DB {
	database := dbPath(client.Collection("_").Path)
	return &DB{api: api(database), client: client, database: database, stats: map[string]*Ops{}}
}

// ProjectID returns the project the clients work in.
func (db *DB) ProjectID() string {
	// database is "projects/P/databases/D".
	p, _, _ := strings.Cut(strings.TrimPrefix(db.database, "projects/"), "/")
	return p
}

// Database returns the database's id.
func (db *DB) Database() string { return db.database[strings.LastIndex(db.database, "/")+1:] }

// Close releases the clients.
func (db *DB) Close() error {
	var errList []error
	for _, c := range db.closers {
		errList = append(errList, c())
	}
	return errors.Join(errList...)
}

// name returns the full name of the document at path ("counters/c1").
func (db *DB) name(path string) string { return db.database + "/documents/" + path }

// reconnect caps gRPC's reconnection backoff at 5 s (its default grows to
// 120 s): after Firestore comes back, a function serves again within
// seconds, without a restart. Calls made while it is away fail at once, and
// the function answers 503.
var reconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
	MinConnectTimeout: 5 * time.Second,
})

// ownerCredentials is how the emulator recognises an admin (rules bypassed),
// the same header the firestore package sends to the emulator.
type ownerCredentials struct{}

func (ownerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (ownerCredentials) RequireTransportSecurity() bool { return false }

// noRetry turns off the generated client's automatic retry of Commit (on
// UNAVAILABLE and RESOURCE_EXHAUSTED): a commit whose answer was lost may
// have been applied, and sending it again would apply an unkeyed increment
// twice. Callers decide what a failed commit means.
var noRetry = gax.WithRetry(func() gax.Retryer { return nil })

// commit applies writes atomically in one round trip, never retried. The
// firestore package offers this only through the deprecated WriteBatch or
// a transaction (two round trips), hence the raw call. Errors are raw gRPC
// errors: callers look at AlreadyExists and FailedPrecondition, then
// classify.
func (db *DB) commit(ctx context.Context, writes ...*pb.Write) (*pb.CommitResponse, error) {
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
	return resp, nil
}

// getAt reads documents by name in one round trip, at readTime (zero:
// now), in the order of names; a missing one is nil. It returns the read
// time. Firestore bills each one as a read.
func (db *DB) getAt(ctx context.Context, names []string, readTime time.Time) ([]*pb.Document, time.Time, error) {
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

// get reads one document now; nil when it does not exist.
func (db *DB) get(ctx context.Context, name string) (*pb.Document, error) {
	docs, _, err := db.getAt(ctx, []string{name}, time.Time{})
	if err != nil {
		return nil, err
	}
	return docs[0], nil
}

// query runs a query and counts the documents it returns (Firestore bills
// at least one read per query).
func (db *DB) query(ctx context.Context, q firestore.Query) ([]*pb.Document, error) {
	req, err := runQueryRequest(q)
	if err != nil {
		return nil, err
	}
	resps, err := db.api.RunQuery(ctx, req)
	var docs []*pb.Document
	for _, r := range resps {
		if d := r.GetDocument(); d != nil {
			docs = append(docs, d)
		}
	}
	db.read(ctx, max(1, len(docs)))
	return docs, err
}

// snapshots runs a query through the high-level client, which the
// instruments example's sharded timestamps page with; the counters store
// queries through Firestore (query).
func (db *DB) snapshots(ctx context.Context, q firestore.Query) ([]*firestore.DocumentSnapshot, error) {
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

// collections lists the ids of the collections under the document name.
func (db *DB) collections(ctx context.Context, name string) ([]string, error) {
	db.read(ctx, 1)
	return db.api.ListCollectionIds(ctx, &pb.ListCollectionIdsRequest{Parent: name})
}

// sum returns the sums of integer fields over every document of the
// collection path (e.g. "counters/c1/shards"), in fields' order, at read
// time at (zero: now), and the read time of the snapshot: every write committed at or before it is
// included, none after. A query with several aggregations counts only the
// documents that hold every field aggregated. Firestore bills one read per
// 1,000 index entries scanned.
func (db *DB) sum(ctx context.Context, collection string, at time.Time, fields ...string) ([]int64, time.Time, error) {
	aggs := make([]*pb.StructuredAggregationQuery_Aggregation, len(fields))
	for i, f := range fields {
		aggs[i] = &pb.StructuredAggregationQuery_Aggregation{
			Alias: fmt.Sprintf("s%d", i),
			Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{
				Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{Field: &pb.StructuredQuery_FieldReference{FieldPath: f}},
			},
		}
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

// count returns how many documents the collection path holds at read time
// at (zero: now), and the read time (Firestore keeps an hour of versions).
func (db *DB) count(ctx context.Context, collection string, at time.Time) (int64, time.Time, error) {
	aggs := []*pb.StructuredAggregationQuery_Aggregation{{Alias: "n",
		Operator: &pb.StructuredAggregationQuery_Aggregation_Count_{Count: &pb.StructuredAggregationQuery_Aggregation_Count{}}}}
	result, readTime, err := db.aggregate(ctx, collection, aggs, at)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, err := integer(result["n"])
	return n, readTime, err
}

// sumOf returns the SUM of an integer field over the documents of query q,
// now: one aggregation.
func (db *DB) sumOf(ctx context.Context, q firestore.Query, field string) (int64, error) {
	req, err := runQueryRequest(q)
	if err != nil {
		return 0, err
	}
	agg := &pb.StructuredAggregationQuery_Aggregation{Alias: "s",
		Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{
			Field: &pb.StructuredQuery_FieldReference{FieldPath: field}}}}
	result, _, err := db.runAggregation(ctx, req.GetParent(), req.GetStructuredQuery(), []*pb.StructuredAggregationQuery_Aggregation{agg}, time.Time{})
	if err != nil {
		return 0, err
	}
	return integer(result["s"])
}

// aggregate runs aggregations over every document of the collection path,
// at read time at (zero: now), and returns their results by alias and the
// read time.
func (db *DB) aggregate(ctx context.Context, collection string, aggs []*pb.StructuredAggregationQuery_Aggregation, at time.Time) (map[string]*pb.Value, time.Time, error) {
	parent, id := db.database+"/documents", collection
	if i := strings.LastIndex(collection, "/"); i >= 0 {
		parent, id = db.name(collection[:i]), collection[i+1:]
	}
	return db.runAggregation(ctx, parent, &pb.StructuredQuery{From: []*pb.StructuredQuery_CollectionSelector{{CollectionId: id}}}, aggs, at)
}

// runAggregation runs aggregations over the documents of a structured
// query under parent, at read time at (zero: now), and returns their
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

// dbPath returns "projects/P/databases/D" of a full document or collection
// path "projects/P/databases/D/documents/...".
func dbPath(p string) string {
	for i, n := 0, 0; i < len(p); i++ {
		if p[i] == '/' {
			if n++; n == 4 {
				return p[:i]
			}
		}
	}
	return p
}

// code returns the gRPC code of a Firestore error.
func code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return codes.DeadlineExceeded
	}
	if errors.Is(err, context.Canceled) {
		return codes.Canceled
	}
	return status.Code(err)
}

// retryAfter is what a client is told to wait after a transient failure.
const retryAfter = time.Second

// classify turns a Firestore failure into the errs vocabulary: a failure a
// retry can fix (unavailable, overloaded, contended, too slow for the
// request's deadline, cancelled) is UNAVAILABLE; anything else is an
// internal error prefixed with what failed.
func classify(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*errs.Error](err); ok {
		return err
	}
	countFailure(code(err))
	switch code(err) {
	case codes.DeadlineExceeded:
		return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), retryAfter, "Firestore did not answer within the deadline; retry shortly")
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Canceled, codes.Internal, codes.Unknown,
		codes.Unauthenticated: // also what gRPC says when fetching an access token failed
		return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), retryAfter, "Firestore is unavailable or busy; retry shortly")
	}
	return fmt.Errorf("firestoredb: %s: %w", what, err)
}

// Package firestoredb is the project's only access to Firestore: opening
// clients for production or the emulator, one-round-trip commits that are
// never retried blindly, SUM aggregations with their read time, and the
// stores of counters and instruments built on them.
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
	"io"
	"strings"
	"sync"
	"sync/atomic"
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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/ledger"
)

// DB holds the Firestore clients of one process.
type DB struct {
	// client is the high-level client, for reads and queries.
	client *firestore.Client
	// raw is the generated client, for commits (one round trip, retries
	// under our control) and aggregations (with their read time).
	raw *vkit.Client
	// database is "projects/P/databases/(default)".
	database string

	statsMu sync.Mutex
	stats   map[string]*Ops
}

// Open connects to Firestore. projectID may be empty to detect it from the
// runtime credentials. With emulatorHost set (FIRESTORE_EMULATOR_HOST), both
// clients talk to the emulator as an owner, bypassing security rules.
func Open(ctx context.Context, projectID, emulatorHost string) (*DB, error) {
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
	client, err := firestore.NewClient(ctx, projectID, opts...)
	if err != nil {
		return nil, fmt.Errorf("firestoredb: open client: %w", err)
	}
	raw, err := vkit.NewClient(ctx, opts...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("firestoredb: open raw client: %w", err)
	}
	return &DB{client: client, raw: raw, database: dbPath(client.Collection("_").Path), stats: map[string]*Ops{}}, nil
}

// ProjectID returns the project the clients work in.
func (db *DB) ProjectID() string {
	// database is "projects/P/databases/D".
	p, _, _ := strings.Cut(strings.TrimPrefix(db.database, "projects/"), "/")
	return p
}

// Close releases both clients.
func (db *DB) Close() error {
	return errors.Join(db.client.Close(), db.raw.Close())
}

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
	ctx = metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", db.database)
	resp, err := db.raw.Commit(ctx, &pb.CommitRequest{Database: db.database, Writes: writes}, noRetry)
	if err != nil {
		ops.FailedCommits.Add(1)
		return nil, err
	}
	ops.Writes.Add(int64(len(writes)))
	return resp, nil
}

// get reads one document; a missing one is a codes.NotFound error.
func (db *DB) get(ctx context.Context, ref *firestore.DocumentRef) (*firestore.DocumentSnapshot, error) {
	db.read(ctx, 1)
	return ref.Get(ctx)
}

// getAll reads documents in one round trip; missing ones have
// Exists() false. Firestore bills each one as a read.
func (db *DB) getAll(ctx context.Context, refs []*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
	db.read(ctx, len(refs))
	return db.client.GetAll(ctx, refs)
}

// queryAll runs a query and counts the documents it returns (Firestore
// bills at least one read per query).
func (db *DB) queryAll(ctx context.Context, q firestore.Query) ([]*firestore.DocumentSnapshot, error) {
	docs, err := q.Documents(ctx).GetAll()
	db.read(ctx, max(1, len(docs)))
	return docs, err
}

// sum returns the sums of integer fields over every document of coll, in
// fields' order, and the read time of the snapshot: every write committed
// at or before it is included, none after. Documents without a field count
// 0 for it. Firestore bills one read per 1,000 index entries scanned.
func (db *DB) sum(ctx context.Context, coll *firestore.CollectionRef, fields ...string) ([]int64, time.Time, error) {
	aggs := make([]*pb.StructuredAggregationQuery_Aggregation, len(fields))
	for i, f := range fields {
		aggs[i] = &pb.StructuredAggregationQuery_Aggregation{
			Alias: fmt.Sprintf("s%d", i),
			Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{
				Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{Field: &pb.StructuredQuery_FieldReference{FieldPath: f}},
			},
		}
	}
	result, readTime, err := db.aggregate(ctx, coll, aggs, time.Time{})
	if err != nil {
		return nil, time.Time{}, err
	}
	out := make([]int64, len(fields))
	for i := range fields {
		n, err := integer(result[fmt.Sprintf("s%d", i)])
		if err != nil {
			// Permanent: the same shards sum the same way on a retry.
			return nil, time.Time{}, errs.Wrap(errs.DataLoss, err, "the %s of %s sum past int64: shards were written outside the functions", fields[i], coll.Path)
		}
		out[i] = n
	}
	return out, readTime, nil
}

// count returns how many documents coll holds at read time at (a recent
// one: Firestore keeps an hour of versions).
func (db *DB) count(ctx context.Context, coll *firestore.CollectionRef, at time.Time) (int64, error) {
	aggs := []*pb.StructuredAggregationQuery_Aggregation{{Alias: "n",
		Operator: &pb.StructuredAggregationQuery_Aggregation_Count_{Count: &pb.StructuredAggregationQuery_Aggregation_Count{}}}}
	result, _, err := db.aggregate(ctx, coll, aggs, at)
	if err != nil {
		return 0, err
	}
	return integer(result["n"])
}

// aggregate runs aggregations over every document of coll, at read time at
// (zero: now), and returns their results by alias and the read time.
func (db *DB) aggregate(ctx context.Context, coll *firestore.CollectionRef, aggs []*pb.StructuredAggregationQuery_Aggregation, at time.Time) (map[string]*pb.Value, time.Time, error) {
	db.ops(ctx).Aggregations.Add(1)
	ledger.Read(ctx, 1)
	parent := db.database + "/documents"
	if coll.Parent != nil {
		parent = coll.Parent.Path
	}
	req := &pb.RunAggregationQueryRequest{
		Parent: parent,
		QueryType: &pb.RunAggregationQueryRequest_StructuredAggregationQuery{
			StructuredAggregationQuery: &pb.StructuredAggregationQuery{
				QueryType: &pb.StructuredAggregationQuery_StructuredQuery{
					StructuredQuery: &pb.StructuredQuery{From: []*pb.StructuredQuery_CollectionSelector{{CollectionId: coll.ID}}},
				},
				Aggregations: aggs,
			},
		},
	}
	if !at.IsZero() {
		req.ConsistencySelector = &pb.RunAggregationQueryRequest_ReadTime{ReadTime: timestamppb.New(at)}
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", db.database)
	stream, err := db.raw.RunAggregationQuery(ctx, req)
	if err != nil {
		return nil, time.Time{}, err
	}
	var (
		result   map[string]*pb.Value
		readTime time.Time
	)
	for {
		res, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		if res.GetResult() != nil {
			result = res.GetResult().GetAggregateFields()
		}
		if res.GetReadTime() != nil {
			readTime = res.GetReadTime().AsTime()
		}
	}
	if result == nil || readTime.IsZero() {
		return nil, time.Time{}, fmt.Errorf("firestoredb: aggregate %s: empty response", coll.Path)
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
	switch code(err) {
	case codes.DeadlineExceeded:
		return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), retryAfter, "Firestore did not answer within the deadline; retry shortly")
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Canceled, codes.Internal, codes.Unknown,
		codes.Unauthenticated: // also what gRPC says when fetching an access token failed
		return errs.Retryable(fmt.Errorf("firestoredb: %s: %w", what, err), retryAfter, "Firestore is unavailable or busy; retry shortly")
	}
	return fmt.Errorf("firestoredb: %s: %w", what, err)
}

// Ops counts the Firestore operations made under one label.
type Ops struct {
	Commits       atomic.Int64 // commits sent
	FailedCommits atomic.Int64 // of which failed
	Writes        atomic.Int64 // writes of the commits that succeeded (billed)
	Reads         atomic.Int64 // documents read or requested (billed)
	Aggregations  atomic.Int64 // aggregation queries
}

// OpCounts is a snapshot of Ops.
type OpCounts struct {
	Commits       int64 `json:"commits"`
	FailedCommits int64 `json:"failed_commits"`
	Writes        int64 `json:"writes"`
	Reads         int64 `json:"reads"`
	Aggregations  int64 `json:"aggregations"`
}

type labelKey struct{}

// WithLabel returns a context whose Firestore operations are counted under
// label (e.g. "increment", "rollup").
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

func (db *DB) ops(ctx context.Context) *Ops {
	label, _ := ctx.Value(labelKey{}).(string)
	if label == "" {
		label = "other"
	}
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	o := db.stats[label]
	if o == nil {
		o = &Ops{}
		db.stats[label] = o
	}
	return o
}

// read counts n documents read under ctx's label, and on the request's
// ledger.
func (db *DB) read(ctx context.Context, n int) {
	db.ops(ctx).Reads.Add(int64(n))
	ledger.Read(ctx, n)
}

// Stats returns the operations counted so far, by label.
func (db *DB) Stats() map[string]OpCounts {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	out := make(map[string]OpCounts, len(db.stats))
	for label, o := range db.stats {
		out[label] = OpCounts{o.Commits.Load(), o.FailedCommits.Load(), o.Writes.Load(), o.Reads.Load(), o.Aggregations.Load()}
	}
	return out
}

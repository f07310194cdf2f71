// Package firestoredb is the project's access to Firestore: opening clients
// for production or the emulator, the SUM aggregation with its read time, and
// the stores of counters built on them.
package firestoredb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	vkit "cloud.google.com/go/firestore/apiv1"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/internal/errs"
)

// DB holds the Firestore clients of one process.
type DB struct {
	// Client is the high-level client used for everything but Sum.
	Client *firestore.Client
	// raw is the generated client: unlike Client it exposes the read time
	// of an aggregation, which Sum needs.
	raw *vkit.Client
	// database is "projects/P/databases/(default)".
	database string
}

// Open connects to Firestore. projectID may be empty to detect it from the
// runtime credentials. With emulatorHost set (FIRESTORE_EMULATOR_HOST), both
// clients talk to the emulator as an owner, bypassing security rules.
func Open(ctx context.Context, projectID, emulatorHost string) (*DB, error) {
	if projectID == "" {
		projectID = firestore.DetectProjectID
	}
	client, err := firestore.NewClient(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("firestoredb: open client: %w", err)
	}
	var opts []option.ClientOption
	if emulatorHost != "" {
		conn, err := grpc.NewClient("passthrough:///"+emulatorHost,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(ownerCredentials{}))
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("firestoredb: dial emulator %s: %w", emulatorHost, err)
		}
		opts = append(opts, option.WithGRPCConn(conn))
	}
	raw, err := vkit.NewClient(ctx, opts...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("firestoredb: open raw client: %w", err)
	}
	return &DB{Client: client, raw: raw, database: dbPath(client.Collection("_").Path)}, nil
}

// ProjectID returns the project the clients work in.
func (db *DB) ProjectID() string {
	// database is "projects/P/databases/D".
	p, _, _ := strings.Cut(strings.TrimPrefix(db.database, "projects/"), "/")
	return p
}

// Close releases both clients.
func (db *DB) Close() error {
	return errors.Join(db.Client.Close(), db.raw.Close())
}

// ownerCredentials is how the emulator recognises an admin (rules bypassed),
// the same header the firestore package sends to the emulator.
type ownerCredentials struct{}

func (ownerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (ownerCredentials) RequireTransportSecurity() bool { return false }

// Sum returns the sum of the integer field over every document of coll and
// the read time of the snapshot it was computed on: every write committed at
// or before that time is included, none after. Documents without the field
// count 0. Firestore bills one document read per 1,000 index entries scanned.
func (db *DB) Sum(ctx context.Context, coll *firestore.CollectionRef, field string) (int64, time.Time, error) {
	parent := db.database + "/documents"
	if coll.Parent != nil {
		parent = coll.Parent.Path
	}
	req := &pb.RunAggregationQueryRequest{
		Parent: parent,
		QueryType: &pb.RunAggregationQueryRequest_StructuredAggregationQuery{
			StructuredAggregationQuery: &pb.StructuredAggregationQuery{
				QueryType: &pb.StructuredAggregationQuery_StructuredQuery{
					StructuredQuery: &pb.StructuredQuery{
						From: []*pb.StructuredQuery_CollectionSelector{{CollectionId: coll.ID}},
					},
				},
				Aggregations: []*pb.StructuredAggregationQuery_Aggregation{{
					Alias: "total",
					Operator: &pb.StructuredAggregationQuery_Aggregation_Sum_{
						Sum: &pb.StructuredAggregationQuery_Aggregation_Sum{
							Field: &pb.StructuredQuery_FieldReference{FieldPath: field},
						},
					},
				}},
			},
		},
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", db.database)
	stream, err := db.raw.RunAggregationQuery(ctx, req)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("firestoredb: sum %s: %w", coll.Path, err)
	}
	var (
		total    *pb.Value
		readTime time.Time
	)
	for {
		res, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("firestoredb: sum %s: %w", coll.Path, err)
		}
		if res.GetResult() != nil {
			total = res.GetResult().GetAggregateFields()["total"]
		}
		if res.GetReadTime() != nil {
			readTime = res.GetReadTime().AsTime()
		}
	}
	if total == nil || readTime.IsZero() {
		return 0, time.Time{}, fmt.Errorf("firestoredb: sum %s: empty response", coll.Path)
	}
	switch v := total.GetValueType().(type) {
	case *pb.Value_IntegerValue:
		return v.IntegerValue, readTime, nil
	case *pb.Value_DoubleValue:
		// Firestore switches to a double when the sum overflows int64.
		if v.DoubleValue == math.Trunc(v.DoubleValue) && math.Abs(v.DoubleValue) < 1<<63 {
			return int64(v.DoubleValue), readTime, nil
		}
		return 0, time.Time{}, fmt.Errorf("firestoredb: sum %s overflows int64", coll.Path)
	case *pb.Value_NullValue:
		return 0, readTime, nil
	}
	return 0, time.Time{}, fmt.Errorf("firestoredb: sum %s: unexpected value %v", coll.Path, total)
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

// Code returns the gRPC code of a Firestore error.
func Code(err error) codes.Code {
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

// Transient reports whether retrying the same call later may succeed.
func Transient(err error) bool {
	switch Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted, codes.Canceled, codes.Internal:
		return true
	}
	return false
}

// Classify turns a Firestore failure into a client-facing error: transient
// failures become UNAVAILABLE (503, retry after a second), anything else is
// internal.
func Classify(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*errs.Error](err); ok {
		return err
	}
	if Transient(err) {
		e := errs.Wrap(errs.Unavailable, err, "Firestore is busy; retry shortly")
		e.RetryAfter = time.Second
		return e
	}
	return fmt.Errorf("%s: %w", what, err)
}

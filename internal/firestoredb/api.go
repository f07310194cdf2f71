package firestoredb

import (
	"context"
	"io"

	vkit "cloud.google.com/go/firestore/apiv1"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/metadata"
)

// Firestore is the one narrow interface the stores talk to
// Firestore through: five calls of the Firestore API, in its own protobuf
// types, each one round trip, a stream's messages collected. The gRPC
// client serves it in production and against the emulator; the model of
// internal/fsmodel serves it to the simulation of the whole service, and a
// differential test holds the model to the emulator.
//
// Errors are the API's gRPC status errors; DB classifies them.
type Firestore interface {
	Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error)
	BatchGetDocuments(ctx context.Context, req *pb.BatchGetDocumentsRequest) ([]*pb.BatchGetDocumentsResponse, error)
	RunQuery(ctx context.Context, req *pb.RunQueryRequest) ([]*pb.RunQueryResponse, error)
	RunAggregationQuery(ctx context.Context, req *pb.RunAggregationQueryRequest) ([]*pb.RunAggregationQueryResponse, error)
	// ListCollectionIds returns every id, paging through the answers.
	ListCollectionIds(ctx context.Context, req *pb.ListCollectionIdsRequest) ([]string, error)
}

// grpcFirestore is Firestore over the generated gRPC client.
type grpcFirestore struct {
	raw      *vkit.Client
	database string // the routing header every call carries
}

func (g grpcFirestore) route(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", g.database)
}

func (g grpcFirestore) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error) {
	return g.raw.Commit(g.route(ctx), req, noRetry)
}

func (g grpcFirestore) BatchGetDocuments(ctx context.Context, req *pb.BatchGetDocumentsRequest) ([]*pb.BatchGetDocumentsResponse, error) {
	stream, err := g.raw.BatchGetDocuments(g.route(ctx), req)
	if err != nil {
		return nil, err
	}
	return collect(stream.Recv)
}

func (g grpcFirestore) RunQuery(ctx context.Context, req *pb.RunQueryRequest) ([]*pb.RunQueryResponse, error) {
	stream, err := g.raw.RunQuery(g.route(ctx), req)
	if err != nil {
		return nil, err
	}
	return collect(stream.Recv)
}

func (g grpcFirestore) RunAggregationQuery(ctx context.Context, req *pb.RunAggregationQueryRequest) ([]*pb.RunAggregationQueryResponse, error) {
	stream, err := g.raw.RunAggregationQuery(g.route(ctx), req)
	if err != nil {
		return nil, err
	}
	return collect(stream.Recv)
}

func (g grpcFirestore) ListCollectionIds(ctx context.Context, req *pb.ListCollectionIdsRequest) ([]string, error) {
	it := g.raw.ListCollectionIds(g.route(ctx), req)
	var ids []string
	for {
		id, err := it.Next()
		if err == iterator.Done {
			return ids, nil
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
}

// collect reads a stream to its end.
func collect[T any](recv func() (T, error)) ([]T, error) {
	var out []T
	for {
		m, err := recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
}

// API returns the interface the store talks to Firestore through, for
// tests that compare it with the model.
func (db *DB) API() Firestore { return db.api }

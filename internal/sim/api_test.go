package sim

import (
	"context"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/internal/fsmodel"
	"github.com/shardcount/shardcount/internal/simsched"
)

// schedAPI is Firestore as an instance's store reaches it: each call
// blocks its actor until the scheduler (internal/simsched) runs it on the
// model, late, failed
// before it applies or after (its answer lost), or cut short with the
// actor's context.
type schedAPI struct{ m *fsmodel.Model }

func unavailable() error { return status.Error(codes.Unavailable, "sim: Firestore is unavailable") }

func (s schedAPI) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.CommitResponse, error) {
	v, err := simsched.ActorOf(ctx).Block(&simsched.Call{What: "Commit", Mutates: true, Apply: func() (any, error) {
		return s.m.Commit(context.Background(), req)
	}})
	resp, _ := v.(*pb.CommitResponse)
	return resp, err
}

func (s schedAPI) BatchGetDocuments(ctx context.Context, req *pb.BatchGetDocumentsRequest) ([]*pb.BatchGetDocumentsResponse, error) {
	v, err := simsched.ActorOf(ctx).Block(&simsched.Call{What: "BatchGet", Apply: func() (any, error) {
		return s.m.BatchGetDocuments(context.Background(), req)
	}})
	resp, _ := v.([]*pb.BatchGetDocumentsResponse)
	return resp, err
}

func (s schedAPI) RunQuery(ctx context.Context, req *pb.RunQueryRequest) ([]*pb.RunQueryResponse, error) {
	v, err := simsched.ActorOf(ctx).Block(&simsched.Call{What: "RunQuery", Apply: func() (any, error) {
		return s.m.RunQuery(context.Background(), req)
	}})
	resp, _ := v.([]*pb.RunQueryResponse)
	return resp, err
}

func (s schedAPI) RunAggregationQuery(ctx context.Context, req *pb.RunAggregationQueryRequest) ([]*pb.RunAggregationQueryResponse, error) {
	v, err := simsched.ActorOf(ctx).Block(&simsched.Call{What: "Aggregate", Apply: func() (any, error) {
		return s.m.RunAggregationQuery(context.Background(), req)
	}})
	resp, _ := v.([]*pb.RunAggregationQueryResponse)
	return resp, err
}

func (s schedAPI) ListCollectionIds(ctx context.Context, req *pb.ListCollectionIdsRequest) ([]string, error) {
	v, err := simsched.ActorOf(ctx).Block(&simsched.Call{What: "ListCollections", Apply: func() (any, error) {
		return s.m.ListCollectionIds(context.Background(), req)
	}})
	resp, _ := v.([]string)
	return resp, err
}

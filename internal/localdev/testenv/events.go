package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/shardcount/internal/fsevent"
)

// ShardEvent returns the request Eventarc sends to url for a write of
// counters/{id}/shards/{shard} that left it holding count at updated: a
// binary-mode CloudEvent whose body is the protobuf DocumentEventData.
func ShardEvent(tb testing.TB, url, project, id string, shard int, count int64, updated time.Time) *http.Request {
	tb.Helper()
	doc := &pb.Document{
		Name:       fmt.Sprintf("projects/%s/databases/%s/documents/counters/%s/shards/%d", project, Database(), id, shard),
		Fields:     map[string]*pb.Value{"count": {ValueType: &pb.Value_IntegerValue{IntegerValue: count}}},
		CreateTime: timestamppb.New(updated),
		UpdateTime: timestamppb.New(updated),
	}
	data, err := fsevent.Encode(doc, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/protobuf")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Type", "google.cloud.firestore.document.v1.written")
	req.Header.Set("Ce-Source", "//firestore.googleapis.com/projects/"+project+"/databases/"+Database())
	req.Header.Set("Ce-Id", fmt.Sprintf("test-%d", time.Now().UnixNano()))
	req.Header.Set("Ce-Subject", fmt.Sprintf("documents/counters/%s/shards/%d", id, shard))
	req.Header.Set("Ce-Time", updated.UTC().Format(time.RFC3339Nano))
	return req
}

// FirestoreAt returns an admin client of project on the emulator at host,
// whatever FIRESTORE_EMULATOR_HOST says.
func FirestoreAt(tb testing.TB, host, project string) *firestore.Client {
	tb.Helper()
	conn, err := grpc.NewClient("passthrough:///"+host,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(ownerToken{}))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := firestore.NewClientWithDatabase(context.Background(), project, Database(), option.WithGRPCConn(conn), option.WithoutAuthentication())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// ownerToken makes the emulator treat requests as an admin's.
type ownerToken struct{}

func (ownerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (ownerToken) RequireTransportSecurity() bool { return false }

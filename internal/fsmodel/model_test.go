package fsmodel

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const testRoot = "projects/p/databases/(default)/documents/"

func set(name string, n int64) *pb.Write {
	return &pb.Write{Operation: &pb.Write_Update{Update: &pb.Document{Name: testRoot + name,
		Fields: map[string]*pb.Value{"n": {ValueType: &pb.Value_IntegerValue{IntegerValue: n}}}}}}
}

// TestACommitAfterAReadIsLater: a read without a read time reads now; a
// commit made after it gets a later time, or a read at that read time
// would see a commit the read did not (issue 37, F6: the model gave a
// later commit the time of an earlier read when its clock had not moved
// past the last commit by more than the read).
func TestACommitAfterAReadIsLater(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := New(func() time.Time { return now })
	ctx := context.Background()
	if _, err := m.Commit(ctx, &pb.CommitRequest{Writes: []*pb.Write{set("c/a", 1)}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Microsecond)
	resps, err := m.BatchGetDocuments(ctx, &pb.BatchGetDocumentsRequest{Documents: []string{testRoot + "c/b"}})
	if err != nil {
		t.Fatal(err)
	}
	read := resps[0].GetReadTime().AsTime()
	resp, err := m.Commit(ctx, &pb.CommitRequest{Writes: []*pb.Write{set("c/b", 2)}})
	if err != nil {
		t.Fatal(err)
	}
	if at := resp.GetCommitTime().AsTime(); !at.After(read) {
		t.Errorf("a commit after a read at %s got the time %s: a read at that time would see it", read, at)
	}
}

// TestACommitPastFourMiBIsRefused: the emulator takes any number of
// writes in a commit (production too, since 2023), and refuses a request
// past 4 MiB (production: 10 MiB) with RESOURCE_EXHAUSTED; the model
// enforces the emulator's limit (issue 37, F3).
func TestACommitPastFourMiBIsRefused(t *testing.T) {
	m := New(nil)
	var many []*pb.Write
	for i := range 1000 {
		many = append(many, set("c/d"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26)), int64(i)))
	}
	if _, err := m.Commit(context.Background(), &pb.CommitRequest{Writes: dedupe(many)}); err != nil {
		t.Errorf("a commit of many writes: %v", err)
	}
	big := strings.Repeat("x", 1<<20-100)
	var huge []*pb.Write
	for i := range 5 {
		w := set("c/big"+string(rune('a'+i)), 0)
		w.GetUpdate().Fields["s"] = &pb.Value{ValueType: &pb.Value_StringValue{StringValue: big}}
		huge = append(huge, w)
	}
	if _, err := m.Commit(context.Background(), &pb.CommitRequest{Writes: huge}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a commit of 5 MiB: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// dedupe keeps the first write of each document.
func dedupe(ws []*pb.Write) []*pb.Write {
	seen := map[string]bool{}
	var out []*pb.Write
	for _, w := range ws {
		if n := w.GetUpdate().GetName(); !seen[n] {
			seen[n] = true
			out = append(out, w)
		}
	}
	return out
}

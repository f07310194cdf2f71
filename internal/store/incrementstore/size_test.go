package incrementstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/store/shared"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/shardcount/shardcount/internal/counter"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/store/counterstore"
)

// TestAFullBatchIsASmallCommit holds GROUP_COMMIT_MAX_BATCH's promise
// (docs/reference/settings.md): the largest shared commit, 499 keyed
// likes of a counter's first use, with the longest ids, uids and keys,
// stays under 0.5 MiB, far within Firestore's 10 MiB (the emulator's
// 4 MiB).
func TestAFullBatchIsASmallCommit(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "") // the DB only builds names here
	db, err := fs.OnAPI(nil, "demo-size", fs.DefaultDatabase)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := shared.New(db, shared.Options{})
	s := New(base, counterstore.New(base, counterstore.Options{}), Options{})
	id := "likes:" + strings.Repeat("p", counter.MaxIDLength-len("likes:"))
	c := counter.Counter{ID: id, NumShards: counter.MaxShards, Mode: counter.Unique, Kind: "likes", Origin: counter.ByKind, Ranked: true}
	var ops []increment.Op
	members := map[string]increment.Membership{}
	for i := range 499 {
		user := fmt.Sprintf("%s%04d", strings.Repeat("u", 124), i) // 128 characters, a uid's most
		ops = append(ops, increment.Op{Delta: 1, User: user, Key: strings.Repeat("k", 255)})
		members[user] = increment.Membership{}
	}
	b := increment.New(c, counter.MaxShards-1, ops)
	b.Next()
	plan := b.Plan(members, time.Now())
	guard := time.Now()
	writes, _, _ := s.writes(b, plan, &plain{s: s, guard: &guard}, trace.SpanContext{})
	size := proto.Size(&pb.CommitRequest{Database: "projects/demo-size/databases/(default)", Writes: writes})
	if len(writes) < 2*499 || size >= 512<<10 {
		t.Errorf("a full batch commits %d writes in %d bytes, want about 1,000 under 0.5 MiB", len(writes), size)
	}
	t.Logf("%d writes, %d KiB", len(writes), size>>10)
}

package firestoredb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

// TestACountIsBookedAsBilled: Firestore bills a count one read per 1,000
// index entries scanned, so a count of 2,500 documents is booked 3 reads,
// on the request's ledger and in the stats, not the one an aggregation
// was booked before (a bucket of a busy hour holds a million).
func TestACountIsBookedAsBilled(t *testing.T) {
	host, err := testenv.EmulatorHost()
	testenv.NeedEmulators(t, err)
	ctx := context.Background()
	db, err := fs.Open(ctx, testenv.NewProjectID("count"), fs.DefaultDatabase, host)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for batch := range 5 {
		writes := make([]*pb.Write, 500)
		for i := range writes {
			writes[i] = fs.SetWrite(db.Name(fmt.Sprintf("things/t%d", batch*500+i)), map[string]*pb.Value{"n": fs.IntValue(1)})
		}
		if _, err := db.Commit(ctx, writes...); err != nil {
			t.Fatal(err)
		}
	}
	for name, count := range map[string]func(context.Context) (int64, error){
		"Count": func(ctx context.Context) (int64, error) {
			n, _, err := db.Count(ctx, "things", time.Time{})
			return n, err
		},
		"CountOf": func(ctx context.Context) (int64, error) {
			return db.CountOf(ctx, db.Collection("things").Query, time.Time{})
		},
	} {
		ctx, l := ledger.New(ledger.WithLabel(ctx, "count_"+name), false)
		n, err := count(ctx)
		if err != nil || n != 2500 {
			t.Fatalf("%s: %d, %v", name, n, err)
		}
		if l.Reads() != 3 || db.Stats()["count_"+name].Reads != 2 {
			t.Errorf("%s of 2,500 documents booked %d reads (stats: %d besides the aggregation); want 3, as billed", name, l.Reads(), db.Stats()["count_"+name].Reads)
		}
	}
}

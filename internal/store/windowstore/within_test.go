package windowstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// TestASlowCandidateMakesNo503: a ranking sums its candidates within half
// its deadline; a sum still running then, or UNAVAILABLE, leaves its
// counter unsummed (the ranking bounds it by its lists and answers not
// exact) rather than failing the ranking. Any other failure is the answer.
// The slow sums here wait for their context to end, so the test ends when
// the halved deadline (1 s) does; its margins are that second for the fast
// sums to be scheduled, and another for within to return.
func TestASlowCandidateMakesNo503(t *testing.T) {
	var ids []string
	for i := range 3 * atOnce {
		ids = append(ids, fmt.Sprintf("c%02d", i))
	}
	sum := func(ctx context.Context, id string) (int64, error) {
		switch {
		case id == "c01" || id == "c40":
			<-ctx.Done() // a sum the emulator or an attacker made slow
			return 0, ctx.Err()
		case id == "c02":
			return 0, errs.Retryable(errors.New("unavailable"), time.Second, "read a sum")
		}
		return int64(len(id)), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sums, unsummed, err := within(ctx, ids, sum)
	if err != nil {
		t.Fatalf("a slow or unavailable candidate failed the ranking: %v", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the sums ran past half the deadline (to %v)", ctx.Err())
	}
	if want := []string{"c01", "c02", "c40"}; !slices.Equal(unsummed, want) {
		t.Errorf("unsummed %v, want %v", unsummed, want)
	}
	for _, id := range ids {
		if _, ok := sums[id]; ok == slices.Contains(unsummed, id) {
			t.Errorf("%s: summed %v, unsummed %v", id, ok, slices.Contains(unsummed, id))
		}
	}

	broken := func(ctx context.Context, id string) (int64, error) {
		if id == "c03" {
			return 0, errs.New(errs.DataLoss, "a bucket that does not decode")
		}
		return sum(ctx, id)
	}
	if _, _, err := within(context.Background(), ids[2:10], broken); !errs.Is(err, errs.DataLoss) {
		t.Errorf("a failure no retry fixes: %v, want it answered", err)
	}
}

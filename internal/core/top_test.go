package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/wire"
)

// TestARankingTheBudgetCannotPayIsNamed: a ranking whose first round
// spends more tokens of top than the deployment's burst allows is a 400
// that says so, rolling windows as rising: before, a rolling window's was
// a 429 whose Retry-After no wait ever got past.
func TestARankingTheBudgetCannotPayIsNamed(t *testing.T) {
	m := newMemCore(t, map[string]string{"RATE_LIMITS": "top=1:1"})
	ctx := context.Background()
	for i, tc := range []struct {
		window string
		limit  int64
		want   string
	}{
		{"last_hour", 10, ""},
		{"last_day", 16, ""},
		{"last_hour", 17, "last_hour of limit 17 spends 2 tokens of top"},
		{"last_day", 25, "allows at most 1 at once"},
		{"rising", 10, "rising spends 4 tokens of top"},
	} {
		reader := Caller{Function: "f", User: fmt.Sprint("reader-", i), Addr: fmt.Sprint("10.4.0.", i)} // a budget each
		_, err := m.TopCounters(ctx, reader, wire.TopCountersRequest{Window: &tc.window, Limit: &tc.limit})
		if tc.want == "" && err != nil || tc.want != "" && (codeOf(err) != "INVALID_ARGUMENT" || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s of limit %d: %v, want %q", tc.window, tc.limit, err, tc.want)
		}
		if _, err := m.TopCounters(ctx, admin, wire.TopCountersRequest{Window: &tc.window, Limit: &tc.limit}); err != nil {
			t.Errorf("an admin's %s of limit %d: %v (admins have no budget)", tc.window, tc.limit, err)
		}
	}
}

// TestTheLastRoundOfARankingIsFullDepth: depths double from the limit, and
// the last of the rounds reads the lists to full depth, which a small
// limit's doubling stopped short of (a limit of 1 ended at 4).
func TestTheLastRoundOfARankingIsFullDepth(t *testing.T) {
	for limit, want := range map[int][]int{1: {1, 2, 25}, 5: {5, 10, 25}, 10: {10, 20, 25}, 20: {20, 25}, 25: {25}} {
		if got := rollingDepths(limit); !slices.Equal(got, want) {
			t.Errorf("limit %d: depths %v, want %v", limit, got, want)
		}
	}
}

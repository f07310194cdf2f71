package windows_test

import (
	"fmt"
	"time"

	"github.com/shardcount/shardcount/internal/windows"
)

// A roll-up read at 05:17:42 adds its change to these buckets.
func ExampleDocID() {
	at := time.Date(2026, 11, 23, 5, 17, 42, 0, time.UTC)
	for _, g := range windows.All {
		fmt.Println(windows.DocID(g, windows.UTC.Start(g, at)))
	}
	// Output:
	// minute_2026-11-23T05:17:00Z
	// hour_2026-11-23T05:00:00Z
	// day_2026-11-23T00:00:00Z
}

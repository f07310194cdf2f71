package windows

import "time"

// Ranked is one counter of a ranking.
type Ranked struct {
	CounterID string
	Count     int64
}

// Rolling is a window that ends now: its buckets of Sum, the last Span of
// them (the current one, partial, included), ranked from the two buckets
// of List that hold them.
type Rolling struct {
	Name string
	Sum  Granularity
	Span int
	List Granularity
}

// The rolling windows topCounters ranks: the last 60 minutes, from minute
// buckets, and the last 24 hours, from hour buckets.
var (
	LastHour = Rolling{Name: "last_hour", Sum: Minute, Span: 60, List: Hour}
	LastDay  = Rolling{Name: "last_day", Sum: Hour, Span: 24, List: Day}
)

// From is the start of the window's first bucket, for a window ending at
// now.
func (r Rolling) From(now time.Time) time.Time {
	return r.Sum.Start(now).Add(-time.Duration(r.Span-1) * r.Sum.Length())
}

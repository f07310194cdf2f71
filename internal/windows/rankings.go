package windows

import "time"

// Ranked is one counter of a ranking.
type Ranked struct {
	CounterID string
	Count     int64
}

// Peak is a counter's running peak in one bucket: the largest sum of the
// bucket's last changes so far (the running maximum suffix sum, as in
// Kadane's algorithm). When the bucket is complete, any part of it that a
// rolling window covers (its last minutes) adds at most Peak; like/unlike
// churn (+1, −1, +1, …) keeps it at 1, where the sum of the changes that
// added grows with every like.
type Peak struct {
	Start time.Time // the bucket's
	Value int64
}

// Add returns the peak after change, a change of the bucket starting at
// start: a peak of an earlier bucket starts over.
func (p Peak) Add(start time.Time, change int64) Peak {
	if !p.Start.Equal(start) {
		p = Peak{Start: start}
	}
	p.Value = max(p.Value, 0) + change
	return p
}

// Listed are the granularities rolling windows list candidates from, whose
// buckets keep a Peak.
var Listed = []Granularity{Hour, Day}

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

package windows

import "time"

// Ranked is one counter of a ranking.
type Ranked struct {
	CounterID string
	Count     int64
}

// PeakSlots is how many slots a listed bucket's peaks are kept for: an
// hour's 10 minutes each, a day's 4 hours.
const PeakSlots = 6

// Peak is a counter's running peaks in one bucket: for each slot s, the
// largest sum of a run of the bucket's last changes that starts in slot s
// or later (the running maximum suffix sum, as in Kadane's algorithm, of
// the changes from slot s on). When the bucket is complete, the part of
// it a rolling window covers (its changes from the window's start on)
// adds at most the peak of the slot holding that start. Like/unlike churn
// (+1, −1, +1, …) adds at most its accounts' one like each, and likes
// early in a bucket count only for windows that start before them, where
// the sum of the changes that added grows with every like and counts for
// every window.
type Peak struct {
	Start  time.Time // the bucket's
	Values [PeakSlots]int64
	// Count is the bucket's count so far (the sum of its changes), and
	// Carried the bucket before's final peaks, each at least 0 (0 when the
	// counter changed in none): a window starting in slot s of the bucket
	// before counts at most Carry(s) (see Carry).
	Count   int64
	Carried [PeakSlots]int64
	// Tracked: Count and Carried are known. A peak written before they
	// were kept lacks them, until the roll-up reads them from the buckets
	// (rollupstore).
	Tracked bool
}

// Add returns the peaks after change, a change at time at of the bucket of
// g starting at start, by cal: of a later bucket, the peaks start over,
// carrying those of the bucket just before (a counter's buckets follow
// each other: roll-ups are serial, each in the bucket of its read time).
func (p Peak) Add(cal Calendar, g Granularity, start, at time.Time, change int64) Peak {
	if !p.Start.Equal(start) {
		next := Peak{Start: start, Tracked: true}
		if p.Start.Equal(cal.Step(g, start, -1)) {
			for s, v := range p.Values {
				next.Carried[s] = max(v, 0)
			}
		}
		p = next
	}
	p.Count += change
	for s := range min(cal.Slot(g, start, at), PeakSlots-1) + 1 { // the runs from slot s on hold this change
		p.Values[s] = max(p.Values[s], 0) + change
	}
	return p
}

// Open is the most the bucket's changes from slot s on add, while it is
// its counter's current bucket: what a window starting in slot s of it
// counts at most, when the counter changed in no later bucket.
func (p Peak) Open(s int) int64 { return max(p.Values[s], 0) }

// Carry is what a window starting in slot s of the bucket before counts at
// most: that bucket's changes from slot s on, and all of this one's. The
// bucket before's peak counts only as far as this bucket's change leaves
// it: likes held across the boundary, taken back after it, carry nothing.
func (p Peak) Carry(s int) int64 { return p.Carried[s] + p.Count }

// Slot is the slot of the bucket of g starting at start that holds t (0
// before the bucket, PeakSlots past it).
func (cal Calendar) Slot(g Granularity, start, t time.Time) int {
	if t.Before(start) {
		return 0
	}
	return min(int(t.Sub(start)/(cal.Span(g, start)/PeakSlots)), PeakSlots)
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
	return now.UTC().Truncate(r.Sum.Length()).Add(-time.Duration(r.Span-1) * r.Sum.Length()) // minutes or hours: the same in every zone
}

// Start is where a ranking of the window at now starts, by cal: From, in
// the List bucket before the current one or in the current one. After a
// day of 23 hours in a zone off UTC's hours by 30 or 45 minutes (or of 22,
// Antarctica/Troll's), From falls two days back for up to an hour a year:
// the window then starts with the day before, that much shorter, since the
// lists that bound it hold two buckets.
func (r Rolling) Start(cal Calendar, now time.Time) time.Time {
	return later(r.From(now), cal.Step(r.List, cal.Start(r.List, now), -1))
}

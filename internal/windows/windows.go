// Package windows holds the rules of counters' time windows: the minute,
// hour and day buckets the roll-up adds each change of a counter to, and
// the ranges history reads. It knows nothing of storage.
//
// A roll-up at read time R stores total(R) and adds total(R) − total(R0),
// exactly what was counted in (R0, R], to the bucket of each granularity
// that holds R. So a change is attributed to the bucket of the roll-up
// that saw it: an increment lands at most the time between two roll-ups
// (about one ROLLUP_CADENCE while the counter is busy) after its own
// bucket ended, never before. Summed over all buckets of one granularity,
// the changes give back the total (until retention deletes old buckets).
package windows

import (
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// Granularity is the length of a bucket.
type Granularity string

const (
	Minute Granularity = "minute"
	Hour   Granularity = "hour"
	Day    Granularity = "day"
)

// All lists the granularities, shortest first.
var All = []Granularity{Minute, Hour, Day}

// Sketched are the granularities a distinct counter keeps sketches of (a
// sketch a shard a bucket): a minute's would be a document a shard a
// minute.
var Sketched = []Granularity{Hour, Day}

// MaxReach bounds how far back a roll-up sets buckets (Reached): a view
// rolls up within a cadence, or an event's redelivery; only one after
// roll-ups failed for longer (their events lost, and reconcile, deployed
// every 15 minutes, too)
// leaves buckets older than this as they were, rather than read every
// sketch of days in one roll-up (5 hours and 2 days of buckets at most, a
// read a sketch in them).
const MaxReach = 3 * time.Hour

// Span is the buckets of granularity G from the one starting at First to
// the one starting at Last.
type Span struct {
	G           Granularity
	First, Last time.Time
}

// Reached are, for each of gs, the buckets a roll-up read at at sets (a
// distinct counter's, to their sketches' estimate): from the one holding
// settle before since (the roll-up before's read time, or the counter's
// creation) to the one holding settle after at. A view the roll-up before
// did not see committed after since, and so was stamped after settle
// before it (a commit's deadline, the instances' clocks' skew); views
// between two roll-ups far apart are in every bucket between them; and
// one stamped by a clock ahead lands in the bucket after. None starts
// more than MaxReach before at.
func (cal Calendar) Reached(gs []Granularity, since, at time.Time, settle time.Duration) []Span {
	if at.Before(since) {
		since = at
	}
	from := later(since.Add(-settle), at.Add(-MaxReach))
	var out []Span
	for _, g := range gs {
		out = append(out, Span{g, cal.Start(g, from), cal.Start(g, at.Add(settle))})
	}
	return out
}

// AllTime is the granularity of a choice's total, one bucket starting at
// AllTimeStart that never expires: rankings of a choice by total read it
// (Of).
const AllTime Granularity = "all"

// AllTimeStart is the start of the AllTime bucket.
var AllTimeStart = time.Unix(0, 0).UTC()

// Of is the granularity of one choice's buckets of a choice counter
// ("hour:love"), which the roll-up keeps beside the counter's own so that
// rankings of one choice are the same queries as any ranking; g for "".
func (g Granularity) Of(choice string) Granularity {
	if choice == "" {
		return g
	}
	return g + ":" + Granularity(choice)
}

// base is the granularity of a choice's buckets' length.
func (g Granularity) base() Granularity {
	b, _, _ := strings.Cut(string(g), ":")
	return Granularity(b)
}

// Of is the rolling window of one choice's buckets.
func (r Rolling) Of(choice string) Rolling {
	r.Sum, r.List = r.Sum.Of(choice), r.List.Of(choice)
	return r
}

// Parse reads a granularity named by the request field or parameter field.
func Parse(field, s string) (Granularity, error) {
	for _, g := range All {
		if string(g) == s {
			return g, nil
		}
	}
	return "", errs.Invalid(field, "must be \"minute\", \"hour\" or \"day\"")
}

// Length returns the bucket's length (a day's in UTC: Span says a day's
// in Zone).
func (g Granularity) Length() time.Duration {
	switch g.base() {
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	}
	return 24 * time.Hour
}

// Calendar says where buckets begin: minutes and hours on UTC's, days at
// midnight in Zone (TIME_ZONE; nil, the zero Calendar's: UTC). It is a
// value of the settings, given to whatever names a bucket: the instances
// of one deployment share their days, and servers of one process (tests,
// the simulation) may each have their own.
type Calendar struct {
	Zone *time.Location
}

// UTC is the calendar of days in UTC, the default.
var UTC = Calendar{Zone: time.UTC}

func (cal Calendar) zone() *time.Location {
	if cal.Zone == nil {
		return time.UTC
	}
	return cal.Zone
}

// Start returns the start of the bucket of g holding t: minutes and hours
// are aligned on UTC's, days on midnight in the calendar's zone.
func (cal Calendar) Start(g Granularity, t time.Time) time.Time {
	if g.base() == Day {
		local := t.In(cal.zone())
		return cal.midnight(local.Year(), local.Month(), local.Day())
	}
	return t.UTC().Truncate(g.Length())
}

// midnight is when day y-m-d begins in the calendar's zone, in UTC: its
// midnight, or, where the clocks go forward at midnight (Santiago,
// Havana, the Azores) and that day has none, the moment they do.
func (cal Calendar) midnight(y int, m time.Month, d int) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, cal.zone())
	if t.Day() != d { // Go took the missing midnight in the day before's offset
		_, end := t.ZoneBounds()
		t = end
	}
	return t.UTC()
}

// Step returns the start of the bucket of g n after the one starting at
// start (before it for n < 0): a day of a zone with summer time lasts 23
// or 25 hours on the days the clocks change.
func (cal Calendar) Step(g Granularity, start time.Time, n int) time.Time {
	if g.base() == Day {
		local := start.In(cal.zone())
		noon := time.Date(local.Year(), local.Month(), local.Day()+n, 12, 0, 0, 0, cal.zone())
		return cal.midnight(noon.Year(), noon.Month(), noon.Day())
	}
	return start.Add(time.Duration(n) * g.Length())
}

// Span is how long the bucket of g starting at start lasts.
func (cal Calendar) Span(g Granularity, start time.Time) time.Duration {
	return cal.Step(g, start, 1).Sub(start)
}

// DocID is the id of a counter's bucket document: "{granularity}_{start}",
// the start in RFC 3339 (UTC), e.g. "hour_2026-11-23T05:00:00Z".
func DocID(g Granularity, start time.Time) string {
	return string(g) + "_" + start.UTC().Format(time.RFC3339)
}

// Retention is how long buckets of each granularity are kept after they
// end: their TTL field expires then.
type Retention map[Granularity]time.Duration

// Tally is what one bucket counted: its change of the count, and of a
// choice counter's count of each choice (nil for other counters).
type Tally struct {
	Count  int64
	Counts map[string]int64
}

// DefaultRetention keeps two days of minutes, five weeks of hours and
// three years of days.
var DefaultRetention = Retention{Minute: 48 * time.Hour, Hour: 35 * 24 * time.Hour, Day: 3 * 365 * 24 * time.Hour}

// ExpireAt is when the bucket of g starting at start, by cal, may be
// deleted.
func (r Retention) ExpireAt(cal Calendar, g Granularity, start time.Time) time.Time {
	return start.Add(cal.Span(g, start) + r[g.base()])
}

// MaxBuckets bounds one history read.
const MaxBuckets = 1000

// Range returns the starts of the buckets of g from the one holding from
// to the one holding to, oldest first; at most MaxBuckets.
func (cal Calendar) Range(g Granularity, from, to time.Time) ([]time.Time, error) {
	first, last := cal.Start(g, from), cal.Start(g, to)
	// A default span that reaches before year 1 starts there: Firestore
	// keeps no earlier timestamp, and would refuse the query.
	first = later(first, firstBucket)
	if last.Before(first) {
		return nil, errs.Invalid("from", "must not be after to")
	}
	if n := int(last.Sub(first)/g.Length()) + 1; n > MaxBuckets+1 {
		return nil, errs.Invalid("from", "and to span %d %s buckets; at most %d", n, g, MaxBuckets)
	}
	var starts []time.Time
	for start := first; !start.After(last); start = cal.Step(g, start, 1) {
		if len(starts) == MaxBuckets {
			return nil, errs.Invalid("from", "and to span more than %d %s buckets", MaxBuckets, g)
		}
		starts = append(starts, start)
	}
	return starts, nil
}

// lastDays are the windows of days a distinct counter's are merged over:
// how many days, today's included.
var lastDays = map[string]int{"last_7_days": 7, "last_30_days": 30}

// LastDays are the starts of the days of window name (last_7_days,
// last_30_days) at now, read from request field.
func (cal Calendar) LastDays(field, name string, now time.Time) ([]time.Time, error) {
	days, ok := lastDays[name]
	if !ok {
		return nil, errs.Invalid(field, "must be \"last_7_days\" or \"last_30_days\"")
	}
	return cal.Range(Day, cal.Step(Day, cal.Start(Day, now), 1-days), now)
}

// firstBucket is the earliest bucket start: Firestore's earliest time.
var firstBucket = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// DefaultSpan is how many buckets history returns when only to (or
// neither bound) is given: the last hour of minutes, the last day of hours,
// the last 30 days.
func DefaultSpan(g Granularity) int {
	switch g {
	case Minute:
		return 60
	case Hour:
		return 24
	}
	return 30
}

// Window returns the start of the current (or, with previous, the last
// complete) bucket of g at now.
func (cal Calendar) Window(g Granularity, now time.Time, previous bool) time.Time {
	start := cal.Start(g, now)
	if previous {
		start = cal.Step(g, start, -1)
	}
	return start
}

func (g Granularity) String() string { return string(g) }

package windows

import (
	"slices"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	at := time.Date(2026, 11, 23, 5, 17, 42, 5, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		g     Granularity
		start string
		id    string
	}{
		{Minute, "2026-11-23T04:17:00Z", "minute_2026-11-23T04:17:00Z"},
		{Hour, "2026-11-23T04:00:00Z", "hour_2026-11-23T04:00:00Z"},
		{Day, "2026-11-23T00:00:00Z", "day_2026-11-23T00:00:00Z"},
	} {
		start := UTC.Start(tc.g, at)
		if got := start.Format(time.RFC3339); got != tc.start {
			t.Errorf("%s start of %s = %s, want %s", tc.g, at, got, tc.start)
		}
		if got := DocID(tc.g, start); got != tc.id {
			t.Errorf("DocID = %s, want %s", got, tc.id)
		}
		if got := UTC.Window(tc.g, at, true); !got.Equal(start.Add(-tc.g.Length())) {
			t.Errorf("%s previous window = %s", tc.g, got)
		}
	}
	if got := DefaultRetention.ExpireAt(UTC, Minute, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 1, 3, 0, 1, 0, 0, time.UTC)) {
		t.Errorf("a minute expires at %s, want 48 h after it ends", got)
	}
}

func TestRange(t *testing.T) {
	from := time.Date(2026, 11, 23, 5, 17, 30, 0, time.UTC)
	starts, err := UTC.Range(Minute, from, from.Add(3*time.Minute))
	if err != nil || len(starts) != 4 || starts[0].Minute() != 17 || starts[3].Minute() != 20 {
		t.Errorf("Range = %v, %v", starts, err)
	}
	if _, err := UTC.Range(Minute, from, from.Add(-time.Minute)); err == nil {
		t.Error("from after to was accepted")
	}
	if _, err := UTC.Range(Minute, from, from.Add(MaxBuckets*time.Minute)); err == nil {
		t.Errorf("%d buckets were accepted", MaxBuckets+1)
	}
	if _, err := UTC.Range(Day, from.AddDate(0, 0, -(MaxBuckets-1)), from); err != nil {
		t.Errorf("%d days: %v", MaxBuckets, err)
	}
	if _, err := Parse("history", "week"); err == nil {
		t.Error("week parsed")
	}
}

func TestRisingIsSmoothed(t *testing.T) {
	r := RisingNow
	if few, many := r.Score(3, 0), r.Score(300, 30*24); few >= many {
		t.Errorf("3 after none scores %.2f, 300 after 30 an hour %.2f: the few must not beat the many", few, many)
	}
	if steady, jump := r.Score(1000, 1000*24), r.Score(100, 10*24); steady >= jump || steady != 0 {
		t.Errorf("a steady 1,000 an hour scores %.2f, a jump from 10 to 100 %.2f", steady, jump)
	}
	if falling := r.Score(5, 50*24); falling >= 0 {
		t.Errorf("falling from 50 to 5 scores %.2f, want below 0", falling)
	}
	now := time.Date(2026, 11, 26, 10, 25, 30, 0, time.UTC)
	from, to := r.Baseline(now)
	if want := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC); !to.Equal(want) || !from.Equal(want.Add(-24*time.Hour)) {
		t.Errorf("baseline of a last hour ending at %s: %s to %s", now, from, to)
	}
}

// TestDaysInAZone: with TIME_ZONE, a day starts at its midnight, the day
// the clocks go back lasts 25 hours (its last slot too holds its last
// hour), and history and the previous day step by days, not by 24 hours.
func TestDaysInAZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cal := Calendar{Zone: ny}
	utc := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	if got := cal.Start(Day, utc("2026-11-26T03:00:00Z")); !got.Equal(utc("2026-11-25T05:00:00Z")) {
		t.Errorf("the day of 22:00 in New York starts %s, want its midnight, 05:00 UTC", got)
	}
	starts, err := cal.Range(Day, utc("2026-10-31T12:00:00Z"), utc("2026-11-02T12:00:00Z"))
	want := []time.Time{utc("2026-10-31T04:00:00Z"), utc("2026-11-01T04:00:00Z"), utc("2026-11-02T05:00:00Z")}
	if err != nil || !slices.EqualFunc(starts, want, time.Time.Equal) {
		t.Errorf("days across the clocks going back: %v, %v; want %v", starts, err, want)
	}
	back := utc("2026-11-01T04:00:00Z")
	if span := cal.Span(Day, back); span != 25*time.Hour {
		t.Errorf("the day the clocks go back lasts %s, want 25h", span)
	}
	if s := cal.Slot(Day, back, back.Add(24*time.Hour+30*time.Minute)); s != PeakSlots-1 {
		t.Errorf("its last hour is in slot %d, want %d", s, PeakSlots-1)
	}
	if prev := cal.Window(Day, utc("2026-11-02T12:00:00Z"), true); !prev.Equal(back) {
		t.Errorf("the previous day of Nov 2 starts %s, want %s", prev, back)
	}
	if h := cal.Start(Hour, utc("2026-11-26T03:30:00Z")); !h.Equal(utc("2026-11-26T03:00:00Z")) {
		t.Errorf("hours stay UTC's: %s", h)
	}
}

// TestMomentumFindsAJump: the roll-up's running momentum of a steady
// counter rises little once its mean has caught up, and a counter that
// jumps from 5 to 60 an hour rises far above it.
func TestMomentumFindsAJump(t *testing.T) {
	r := RisingNow
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var steady, jump Momentum
	for h := range 96 {
		at := start.Add(time.Duration(h)*time.Hour + 30*time.Minute)
		steady = steady.Add(r, at, 100)
		if h < 95 {
			jump = jump.Add(r, at, 5)
		} else {
			jump = jump.Add(r, at, 60)
		}
	}
	if s, j := steady.Rise(r), jump.Rise(r); j < 10 || s > 1 {
		t.Errorf("after four days: a steady 100 rises %.2f, a jump from 5 to 60 %.2f", s, j)
	}
	quiet := Momentum{}.Add(r, start, 24*5).Add(r, start.Add(48*time.Hour), 5)
	if got := quiet.Mean(); got > 5 {
		t.Errorf("two empty days after an hour of 120 leave a mean of %.2f an hour, want it decayed", got)
	}
	// A day after it is first seen, a steady giant's mean is its rate, not
	// a fraction of it: it does not rise.
	var giant, small Momentum
	for h := range 25 {
		at := start.Add(time.Duration(h)*time.Hour + time.Minute)
		giant = giant.Add(r, at, 10_000)
		if h < 24 {
			small = small.Add(r, at, 5)
		} else {
			small = small.Add(r, at, 60)
		}
	}
	if g, s := giant.Rise(r), small.Rise(r); g > 1 || s < 10 {
		t.Errorf("a day after a deploy: a steady 10,000 an hour rises %.2f, a jump from 5 to 60 %.2f", g, s)
	}
}

// TestEveryZonesDays: in eleven zones of tzdata (those whose days are
// odd: midnight skipped, half hours, a day dropped), over six years, each day
// starts where the day before ends, lasts 22 to 26 hours, and holds the
// instants it starts; where the clocks go forward at midnight (Santiago),
// the day starts when they do.
func TestEveryZonesDays(t *testing.T) {
	for _, name := range []string{"America/Santiago", "America/Havana", "Atlantic/Azores", "America/New_York", "Australia/Adelaide",
		"Asia/Kolkata", "Pacific/Chatham", "America/St_Johns", "Europe/London", "Pacific/Apia", "UTC"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		cal := Calendar{Zone: loc}
		day := cal.Start(Day, time.Date(2025, 1, 1, 12, 0, 0, 0, loc))
		for range 6 * 366 {
			next := cal.Step(Day, day, 1)
			if span := next.Sub(day); span < 22*time.Hour || span > 26*time.Hour || cal.Start(Day, next) != next || cal.Step(Day, next, -1) != day ||
				cal.Start(Day, next.Add(-time.Second)) != day {
				t.Fatalf("%s: the day of %s lasts %s to %s", name, day, span, next)
			}
			day = next
		}
	}
}

// TestAPeakCarriesOnlyWhatTheNextBucketLeaves: a counter's peaks in the
// bucket after carry the bucket before's, clipped at 0, plus the bucket's
// own count: 70 held across the boundary and taken back carry 0; a run
// that stays carries itself; a gap of a bucket carries nothing.
func TestAPeakCarriesOnlyWhatTheNextBucketLeaves(t *testing.T) {
	h := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	at := func(hour int, minute int) time.Time {
		return h.Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
	}
	for _, tc := range []struct {
		name    string
		changes []struct {
			hour, minute int
			n            int64
		}
		hour   int   // the bucket of the last change
		carry2 int64 // Carry(2): a window starting 20 minutes into the hour before
		open2  int64 // Open(2)
	}{
		{"held across the boundary, taken back after", []struct {
			hour, minute int
			n            int64
		}{{0, 59, 70}, {1, 0, -70}}, 1, 0, 0},
		{"a rise that stays", []struct {
			hour, minute int
			n            int64
		}{{0, 10, 5}, {0, 30, 20}, {1, 5, 3}}, 1, 23, 0},
		{"churn in the bucket before, then quiet", []struct {
			hour, minute int
			n            int64
		}{{0, 25, 1}, {0, 26, -1}, {0, 27, 1}, {1, 1, 0}}, 1, 1, 0},
		{"a gap of a bucket", []struct {
			hour, minute int
			n            int64
		}{{0, 30, 40}, {2, 25, 2}}, 2, 2, 2},
		{"the current bucket only", []struct {
			hour, minute int
			n            int64
		}{{0, 30, 4}, {0, 40, -1}}, 0, 3, 3},
	} {
		var p Peak
		for _, c := range tc.changes {
			p = p.Add(UTC, Hour, at(c.hour, 0), at(c.hour, c.minute), c.n)
		}
		if !p.Start.Equal(at(tc.hour, 0)) || !p.Tracked || p.Carry(2) != tc.carry2 || p.Open(2) != tc.open2 {
			t.Errorf("%s: %+v, Carry(2) %d Open(2) %d; want %d and %d", tc.name, p, p.Carry(2), p.Open(2), tc.carry2, tc.open2)
		}
	}
}

// TestARollingDayStartsWithinTwoDays: in Adelaide (UTC+9:30, +10:30 in
// summer), 4 October 2026 lasts 23 hours, from 14:30 UTC on the 3rd. At
// 13:30 UTC on the 4th, midnight starting the 5th, the last 24 hours
// would start at 14:00 UTC on the 3rd, in the day two back, which the
// lists of a ranking do not bound: the window starts with the day before
// instead. An hour later, a month later, and in UTC always, it is From.
func TestARollingDayStartsWithinTwoDays(t *testing.T) {
	adelaide, err := time.LoadLocation("Australia/Adelaide")
	if err != nil {
		t.Skip(err)
	}
	cal := Calendar{Zone: adelaide}
	now := time.Date(2026, 10, 4, 13, 30, 0, 0, time.UTC)
	if from := LastDay.From(now); !from.Equal(time.Date(2026, 10, 3, 14, 0, 0, 0, time.UTC)) {
		t.Fatalf("From: %s", from)
	}
	want := time.Date(2026, 10, 3, 14, 30, 0, 0, time.UTC)
	if got := LastDay.Start(cal, now); !got.Equal(want) || !cal.Start(Day, got).Equal(cal.Step(Day, cal.Start(Day, now), -1)) {
		t.Errorf("Start at %s: %s, want %s", now, got, want)
	}
	for _, at := range []time.Time{now.Add(time.Hour), now.AddDate(0, 1, 0)} {
		if got := LastDay.Start(cal, at); !got.Equal(LastDay.From(at)) {
			t.Errorf("Start at %s: %s, want From %s", at, got, LastDay.From(at))
		}
	}
	if got := LastHour.Start(UTC, now); !got.Equal(LastHour.From(now)) {
		t.Errorf("last_hour: %s", got)
	}
}

func TestARollUpSetsTheBucketsItReached(t *testing.T) {
	at := func(s string) time.Time { t2, _ := time.Parse(time.RFC3339, s); return t2 }
	span := func(g Granularity, first, last string) Span { return Span{g, at(first), at(last)} }
	for _, tc := range []struct {
		name      string
		since, at string
		want      []Span
	}{
		{"within one hour", "2026-11-23T05:01:00Z", "2026-11-23T05:17:42Z",
			[]Span{span(Hour, "2026-11-23T05:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"across an hour: its last views", "2026-11-23T04:59:58Z", "2026-11-23T05:00:03Z",
			[]Span{span(Hour, "2026-11-23T04:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"within a minute of the hour: the hour before again, for late commits", "2026-11-23T05:00:03Z", "2026-11-23T05:00:40Z",
			[]Span{span(Hour, "2026-11-23T04:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"the roll-up before read past the minute", "2026-11-23T05:01:01Z", "2026-11-23T05:01:13Z",
			[]Span{span(Hour, "2026-11-23T05:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"within a minute of the next hour: a clock ahead is in it", "2026-11-23T05:58:50Z", "2026-11-23T05:59:30Z",
			[]Span{span(Hour, "2026-11-23T05:00:00Z", "2026-11-23T06:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"across midnight", "2026-11-22T23:59:58Z", "2026-11-23T00:00:03Z",
			[]Span{span(Hour, "2026-11-22T23:00:00Z", "2026-11-23T00:00:00Z"), span(Day, "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"after a quiet hour: every hour between, the one a view at its end is in too", "2026-11-23T03:10:00Z", "2026-11-23T05:00:00.03Z",
			[]Span{span(Hour, "2026-11-23T03:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"after roll-ups failed for hours: three hours back at most", "2026-11-13T03:10:00Z", "2026-11-23T05:00:00Z",
			[]Span{span(Hour, "2026-11-23T02:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
		{"a roll-up late after one just past the hour: a view stamped before it may commit after that one read", "2026-11-23T05:00:01Z", "2026-11-23T05:02:00Z",
			[]Span{span(Hour, "2026-11-23T04:00:00Z", "2026-11-23T05:00:00Z"), span(Day, "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")}},
	} {
		if got := UTC.Reached(Sketched, at(tc.since), at(tc.at), time.Minute); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Days in a zone: midnight in Etc/GMT+1 is 01:00 UTC. A roll-up read
	// by a clock behind the one before (since after at) reaches from
	// settle before at, here the hour and the zone's day before; from
	// settle before since, it would reach neither.
	zone, err := time.LoadLocation("Etc/GMT+1")
	if err != nil {
		t.Fatal(err)
	}
	cal := Calendar{Zone: zone}
	want := []Span{span(Hour, "2026-11-23T00:00:00Z", "2026-11-23T01:00:00Z"), span(Day, "2026-11-22T01:00:00Z", "2026-11-23T01:00:00Z")}
	if got := cal.Reached(Sketched, at("2026-11-23T01:01:30Z"), at("2026-11-23T01:00:10Z"), time.Minute); !slices.Equal(got, want) {
		t.Errorf("across midnight in Etc/GMT+1, since after at: %v, want %v", got, want)
	}
}

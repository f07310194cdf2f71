package windows

import (
	"math"
	"time"
)

// Rising scores what is rising: how far a counter's last hour is above
// its own baseline, the hours before it. Its count of the last 60 minutes,
// x, is weighed against λ, its mean per hour over the BaselineHours
// before: score = (x − λ) / √(λ + Prior), a Poisson z-score (a count of
// mean λ varies by about √λ) with a prior of Prior events an hour of noise
// added to the variance, so a counter with no baseline needs more than a
// few events to score: 3 after none score 3/√10 ≈ 0.9, 300 after 30 an
// hour (270)/√40 ≈ 43. A steady counter, however large, scores about 0;
// one falling scores below 0 and is not listed.
type Rising struct {
	// Prior is the events an hour of noise: the larger, the more a small
	// counter must gain to rank.
	Prior float64
	// BaselineHours is how many hours before the last one make the
	// baseline.
	BaselineHours int
}

// RisingNow are the parameters topCounters?window=rising ranks with.
var RisingNow = Rising{Prior: 10, BaselineHours: 24}

// Score is the score of a last hour of x after baseline events in the
// BaselineHours before.
func (r Rising) Score(x, baseline int64) float64 {
	return r.scoreRate(float64(x), max(float64(baseline), 0)/float64(r.BaselineHours))
}

// Most is the most a counter with at most x in the last hour scores,
// whatever its baseline: a baseline only lowers a score.
func (r Rising) Most(x int64) float64 { return r.Score(max(x, 0), 0) }

// scoreRate is the score of x against a mean per hour of lambda.
func (r Rising) scoreRate(x, lambda float64) float64 {
	return (x - lambda) / math.Sqrt(lambda+r.Prior)
}

// Momentum is what the roll-up keeps of a counter to find it rising
// without reading its history: its count of the current hour so far,
// and a running mean of its hours before (each hour's count weighs
// 1/BaselineHours, an hour without a roll-up counts 0). Its Rise, written
// on the hour's bucket, ranks the candidates a rising ranking then scores
// exactly from the buckets, so a small counter that jumps is a candidate
// among many larger steady ones.
type Momentum struct {
	Hour  time.Time // the current hour's start
	Count int64     // its count so far
	Rate  float64   // the running mean per hour before it, from 0
	// Weight is how much of Rate the hours seen make (1 − keep^hours):
	// the mean of a counter seen for a few hours is Rate / Weight, not
	// Rate, which starts from nothing.
	Weight float64
}

// Add is the momentum after change, rolled up at time at.
func (m Momentum) Add(r Rising, at time.Time, change int64) Momentum {
	if h := at.UTC().Truncate(time.Hour); !m.Hour.Equal(h) {
		if !m.Hour.IsZero() {
			keep := 1 - 1/float64(r.BaselineHours)
			// The hour that ended counted Count, those since without a
			// roll-up nothing.
			decay := math.Pow(keep, float64(h.Sub(m.Hour)/time.Hour-1))
			m.Rate = (m.Rate*keep + float64(m.Count)*(1-keep)) * decay
			m.Weight = 1 - (1-m.Weight)*keep*decay
		}
		m.Hour, m.Count = h, 0
	}
	m.Count += change
	return m
}

// Mean is the running mean per hour of the hours before the current one
// (0 before any).
func (m Momentum) Mean() float64 {
	if m.Weight <= 0 {
		return 0
	}
	return max(m.Rate/m.Weight, 0)
}

// Rise is the momentum's hour so far scored against its running mean.
func (m Momentum) Rise(r Rising) float64 { return r.scoreRate(float64(m.Count), m.Mean()) }

// Baseline is the span of hour buckets of the baseline, for a last hour
// ending at now: the BaselineHours before the hour holding its start.
func (r Rising) Baseline(now time.Time) (from, to time.Time) {
	to = LastHour.From(now).Truncate(time.Hour)
	return to.Add(-time.Duration(r.BaselineHours) * time.Hour), to
}

// Scored is a counter of a rising ranking.
type Scored struct {
	Ranked
	// Count is its last hour's; Baseline its mean per hour before.
	Baseline float64
	Score    float64
}

// Package windowstore reads the roll-up's window buckets back: a
// counter's history, and rankings of a window, of a rolling window, or by
// total.
package windowstore

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/windows"
)

// Store reads the buckets of one database.
type Store struct {
	db       *fs.DB
	cal      windows.Calendar
	upgraded upgraded
}

// New returns the store on db, whose buckets begin as cal says.
func New(db *fs.DB, cal windows.Calendar) *Store { return &Store{db: db, cal: cal} }

// HistoryQuery is History's query: counter id's buckets of g from first
// to last.
func (s *Store) HistoryQuery(id string, g windows.Granularity, first, last time.Time) firestore.Query {
	return s.db.Collection(dm.UnderCounter(id, dm.Windows)).
		Where(dm.FieldGranularity, "==", string(g)).
		Where(dm.FieldStart, ">=", first).Where(dm.FieldStart, "<=", last).
		OrderBy(dm.FieldStart, firestore.Asc)
}

// History returns counter id's tally in each bucket of g starting at
// starts (consecutive, oldest first); a bucket never written counts 0.
// It reads only the buckets that exist: one billed read each.
func (s *Store) History(ctx context.Context, id string, g windows.Granularity, starts []time.Time) ([]windows.Tally, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	docs, err := s.db.Query(ctx, s.HistoryQuery(id, g, starts[0], starts[len(starts)-1]))
	if err != nil {
		return nil, fs.Classify(err, "read the history of "+id)
	}
	byStart := map[time.Time]windows.Tally{}
	for _, pd := range docs {
		d := fs.DocOf(pd)
		t := windows.Tally{Count: d.Int(dm.FieldCount)}
		counts := d.Map(dm.FieldCounts)
		for _, choice := range counts.Fields() {
			if t.Counts == nil {
				t.Counts = map[string]int64{}
			}
			t.Counts[choice] = counts.Int(choice)
		}
		if err := d.Err(counts); err != nil {
			return nil, errs.Wrap(errs.DataLoss, err, "a bucket of %q is malformed", id)
		}
		byStart[d.Time(dm.FieldStart).UTC()] = t
	}
	out := make([]windows.Tally, len(starts))
	for i, st := range starts {
		out[i] = byStart[st.UTC()]
	}
	return out, nil
}

// By is what a ranking of buckets orders by: the count, or a bound on
// what a part of the bucket counted: its peak or carry of a slot, or (of
// roll-ups of before peaks) its gross, the sum of its changes that added.
type By string

const (
	ByCount By = dm.FieldCount
	// ByEstimate orders a distinct kind's buckets of an hour or a day by
	// their estimate of its users (a count of a sum it is not: rolling
	// windows and their upgrade's look, which read counts, never see it).
	ByEstimate By = dm.FieldEstimate
	// ByRise orders an hour's buckets by their counter's rise
	// (windows.Momentum): rising's candidates.
	ByRise By = dm.FieldRise
)

// ByPeak orders by the peak of slot s while the bucket is its counter's
// current one (0 after): what its changes from slot s on add at most.
// ByCarry orders by the bucket before's peak of slot s plus the bucket's
// count (windows.Peak).
func ByPeak(s int) By  { return By(dm.FieldPeak(s)) }
func ByCarry(s int) By { return By(dm.FieldCarry(s)) }

// TopQuery is Top's query for a window (g, start), or over the counters'
// totals when g is "": ranked counters only, of kind when not "", highest
// by first.
func (s *Store) TopQuery(g windows.Granularity, start time.Time, limit int, kind string, by By) firestore.Query {
	if g == "" {
		q := s.db.Collection(dm.Counters).Query
		if kind != "" {
			q = q.Where(dm.FieldKind, "==", kind)
		}
		return q.Where(dm.FieldRanked, "==", true).Where(dm.FieldCount, ">", 0).
			OrderBy(dm.FieldCount, firestore.Desc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	}
	return s.BucketsQuery(g, start, kind, by).Where(string(by), ">", 0).Limit(limit)
}

// BucketsQuery is the ranked counters' buckets of g starting at start (of
// kind, when not "") that have a value by, highest first, ties by id.
func (s *Store) BucketsQuery(g windows.Granularity, start time.Time, kind string, by By) firestore.Query {
	q := s.db.CollectionGroup(dm.Windows).Where(dm.FieldGranularity, "==", string(g)).Where(dm.FieldStart, "==", start)
	if kind != "" {
		q = q.Where(dm.FieldKind, "==", kind)
	}
	return q.Where(dm.FieldRanked, "==", true).OrderBy(string(by), firestore.Desc).OrderBy(dm.FieldCounterID, firestore.Asc)
}

// Top returns the ranked counters (of kind, when not "") with the highest
// positive count in the bucket of g starting at start (estimated: the
// highest estimate, of a distinct kind), or by total when g is "": one
// indexed query, ties broken by counter id.
func (s *Store) Top(ctx context.Context, g windows.Granularity, start time.Time, limit int, kind string, estimated bool) ([]windows.Ranked, error) {
	by := ByCount
	if estimated && g != "" {
		by = ByEstimate
	}
	ranked, _, err := s.top(ctx, g, start, limit, kind, by, time.Time{})
	return ranked, err
}

func (s *Store) top(ctx context.Context, g windows.Granularity, start time.Time, limit int, kind string, by By, at time.Time) ([]windows.Ranked, time.Time, error) {
	docs, at, err := s.db.QueryAt(ctx, s.TopQuery(g, start, limit, kind, by), at)
	if err != nil {
		return nil, at, fs.Classify(err, "rank counters")
	}
	out := make([]windows.Ranked, 0, len(docs))
	for _, pd := range docs {
		d := fs.DocOf(pd)
		r := windows.Ranked{CounterID: d.ID, Count: d.Int(string(by))}
		if g != "" {
			r.CounterID = d.Str(dm.FieldCounterID)
		}
		out = append(out, r)
	}
	return out, at, nil
}

package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/windows"
)

// Time windows of counters: counters/{id}/windows/{granularity}_{start},
// written by the roll-up (WriteRollup), read back by History and ranked
// by Top.
const (
	fieldCounterID   = "counter_id"
	fieldGranularity = "granularity"
	fieldStart       = "start"
	fieldGross       = "gross"
)

// Windows are the roll-up's buckets read back: a counter's history, and
// rankings.
type Windows struct{ *base }

func (b *base) windowName(id string, g windows.Granularity, start time.Time) string {
	return b.db.name(underCounter(id, WindowsCollection) + "/" + windows.DocID(g, start))
}

// HistoryQuery is History's query: counter id's buckets of g from first
// to last.
func (s *Windows) HistoryQuery(id string, g windows.Granularity, first, last time.Time) firestore.Query {
	return s.db.client.Collection(underCounter(id, WindowsCollection)).
		Where(fieldGranularity, "==", string(g)).
		Where(fieldStart, ">=", first).Where(fieldStart, "<=", last).
		OrderBy(fieldStart, firestore.Asc)
}

// History returns counter id's count in each bucket of g starting at
// starts (consecutive, oldest first); a bucket never written counts 0.
// It reads only the buckets that exist: one billed read each.
func (s *Windows) History(ctx context.Context, id string, g windows.Granularity, starts []time.Time) ([]int64, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	docs, err := s.db.query(ctx, s.HistoryQuery(id, g, starts[0], starts[len(starts)-1]))
	if err != nil {
		return nil, classify(err, "read the history of "+id)
	}
	byStart := map[time.Time]int64{}
	for _, pd := range docs {
		d := docOf(pd)
		byStart[d.time(fieldStart).UTC()] = d.integer(fieldCount)
	}
	out := make([]int64, len(starts))
	for i, st := range starts {
		out[i] = byStart[st.UTC()]
	}
	return out, nil
}

// Ranked is one counter of a ranking.
type Ranked struct {
	CounterID string
	Count     int64
}

// By is what a ranking of buckets orders by: the count, or the gross
// (the sum of the bucket's roll-up changes that added, a bound on what any
// part of it counted).
type By string

const (
	ByCount By = fieldCount
	ByGross By = fieldGross
)

// TopQuery is Top's query for a window (g, start), or over the counters'
// totals when g is "": ranked counters only, of kind when not "", highest
// by first.
func (s *Windows) TopQuery(g windows.Granularity, start time.Time, limit int, kind string, by By) firestore.Query {
	if g == "" {
		q := s.db.client.Collection(CountersCollection).Query
		if kind != "" {
			q = q.Where(fieldKind, "==", kind)
		}
		return q.Where(fieldRanked, "==", true).Where(fieldCount, ">", 0).
			OrderBy(fieldCount, firestore.Desc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	}
	q := s.db.client.CollectionGroup(WindowsCollection).Where(fieldGranularity, "==", string(g)).Where(fieldStart, "==", start)
	if kind != "" {
		q = q.Where(fieldKind, "==", kind)
	}
	return q.Where(fieldRanked, "==", true).Where(string(by), ">", 0).
		OrderBy(string(by), firestore.Desc).OrderBy(fieldCounterID, firestore.Asc).Limit(limit)
}

// Top returns the ranked counters (of kind, when not "") with the highest
// positive count in the bucket of g starting at start, or by total when g
// is "": one indexed query, ties broken by counter id.
func (s *Windows) Top(ctx context.Context, g windows.Granularity, start time.Time, limit int, kind string) ([]Ranked, error) {
	return s.top(ctx, g, start, limit, kind, ByCount)
}

func (s *Windows) top(ctx context.Context, g windows.Granularity, start time.Time, limit int, kind string, by By) ([]Ranked, error) {
	docs, err := s.db.query(ctx, s.TopQuery(g, start, limit, kind, by))
	if err != nil {
		return nil, classify(err, "rank counters")
	}
	out := make([]Ranked, 0, len(docs))
	for _, pd := range docs {
		d := docOf(pd)
		r := Ranked{CounterID: d.id, Count: d.integer(string(by))}
		if g != "" {
			r.CounterID = d.str(fieldCounterID)
		}
		out = append(out, r)
	}
	return out, nil
}

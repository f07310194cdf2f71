package loadtest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/internal/windows"
)

// WindowsReport is what the time windows cost: the roll-up's writes with
// buckets on and off (two lag runs), the latency of rankings over many
// active counters, and the reads of a history.
type WindowsReport struct {
	On, Off *LagReport
	// Top is topCounters' latency over ActiveCounters counters with a
	// bucket in the current hour (and a total): each query returns limit
	// documents, billed one read each.
	ActiveCounters int           `json:"active_counters"`
	Top            []ReadLatency `json:"top"`
	// History is getCounter?history=…'s latency, and its reads as the
	// server counted them (the counter document and one per bucket that
	// exists).
	History []ReadLatency `json:"history"`
}

// TopLatency gives n counters a bucket in the current hour and a total,
// written straight to Firestore, then times topCounters through the
// functions.
func TopLatency(ctx context.Context, f *Functions, raw *Raw, n, reps int) ([]ReadLatency, error) {
	hour := windows.UTC.Start(windows.Hour, time.Now())
	prefix := fmt.Sprintf("load-top-%d", time.Now().UnixNano())
	bw := raw.Client.BulkWriter(ctx)
	var jobs []*firestore.BulkWriterJob
	for i := range n {
		id := fmt.Sprintf("%s-%05d", prefix, i)
		count := int64(1 + i%997)
		for _, w := range []struct {
			path string
			data map[string]any
		}{
			// Ranked, as an admin's counter and its buckets are (rankings
			// list ranked counters only).
			{"counters/" + id, map[string]any{"num_shards": 1, "count": count, "origin": "admin", "owner": "", "ranked": true}},
			{"counters/" + id + "/windows/" + windows.DocID(windows.Hour, hour), map[string]any{
				"counter_id": id, "granularity": "hour", "start": hour, "count": count, "ranked": true,
				"expire_at": hour.Add(36 * 24 * time.Hour)}},
		} {
			job, err := bw.Set(raw.Client.Doc(w.path), w.data)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, job)
		}
	}
	bw.End()
	for _, j := range jobs {
		if _, err := j.Results(); err != nil {
			return nil, err
		}
	}
	var out []ReadLatency
	for _, q := range []struct {
		window string
		limit  int
	}{{"hour", 10}, {"hour", 100}, {"all", 10}, {"all", 100}} {
		l, err := Timed(ctx, reps, func(ctx context.Context) error {
			var rk struct{ Counters []any }
			_, err := f.Do(ctx, "GET", "topCounters", fmt.Sprintf("?window=%s&limit=%d", q.window, q.limit), nil, &rk)
			if err == nil && len(rk.Counters) != q.limit {
				err = fmt.Errorf("topCounters?window=%s&limit=%d returned %d counters", q.window, q.limit, len(rk.Counters))
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		l.Method, l.BilledReads = fmt.Sprintf("topCounters window=%s limit=%d", q.window, q.limit), q.limit
		out = append(out, l)
	}
	return out, nil
}

// HistoryCost writes a counter whose last hour has a bucket every minute
// and whose last 30 days a bucket every day, then times its histories and
// takes their reads from the server's count.
func HistoryCost(ctx context.Context, f *Functions, raw *Raw, reps int) ([]ReadLatency, error) {
	id := fmt.Sprintf("load-history-%d", time.Now().UnixNano())
	if err := f.CreateCounter(ctx, id, 1); err != nil {
		return nil, err
	}
	now := time.Now()
	bw := raw.Client.BulkWriter(ctx)
	for _, g := range []windows.Granularity{windows.Minute, windows.Day} {
		for i := range windows.DefaultSpan(g) {
			start := windows.UTC.Step(g, windows.UTC.Start(g, now), -i)
			if _, err := bw.Set(raw.Client.Doc("counters/"+id+"/windows/"+windows.DocID(g, start)), map[string]any{
				"counter_id": id, "granularity": string(g), "start": start, "count": int64(i + 1), "expire_at": start.Add(4 * 365 * 24 * time.Hour)}); err != nil {
				return nil, err
			}
		}
	}
	bw.End()
	var out []ReadLatency
	for _, g := range []windows.Granularity{windows.Minute, windows.Day} {
		before, _ := f.Stats(ctx)
		l, err := Timed(ctx, reps, func(ctx context.Context) error {
			var h struct{ History []any }
			_, err := f.Do(ctx, "GET", "getCounter", "?history="+string(g)+"&counter_id="+url.QueryEscape(id), nil, &h)
			if err == nil && len(h.History) != windows.DefaultSpan(g) {
				err = fmt.Errorf("history=%s returned %d buckets", g, len(h.History))
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		after, _ := f.Stats(ctx)
		l.Method, l.Shards = fmt.Sprintf("getCounter history=%s (%d buckets)", g, windows.DefaultSpan(g)), 1
		l.BilledReads = int((after.Firestore["read"].Reads - before.Firestore["read"].Reads) / int64(reps+2))
		out = append(out, l)
	}
	return out, nil
}

// Timed runs call reps times after two warm-ups and returns its latency.
func Timed(ctx context.Context, reps int, call func(context.Context) error) (ReadLatency, error) {
	var lat []time.Duration
	for i := range reps + 2 {
		t0 := time.Now()
		if err := call(ctx); err != nil {
			return ReadLatency{}, err
		}
		if i >= 2 {
			lat = append(lat, time.Since(t0))
		}
	}
	slices.Sort(lat)
	return ReadLatency{Reads: reps, P50MS: ms(percentile(lat, 50)), P99MS: ms(percentile(lat, 99))}, nil
}

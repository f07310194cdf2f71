// Package feed measures a feed's page, read the three ways an app can:
// a listener per document, a getCounter per counter, and one getCounters
// call; and a hot page, the same page read by many readers, as the
// instance's cache warms. Billed reads are what the function server
// counted (its "feed" and "read" labels), or one per listener's first
// snapshot.
package feed

import (
	"context"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// Page is the feed's page: Posts posts, each with a counter of every one
// of Kinds, and the reader's member documents of MemberKinds.
type Page struct {
	Posts       []string
	Kinds       []string // as in COUNTER_KINDS: likes (unique), reactions (choices), views (plain), viewers (distinct)
	MemberKinds []string // the kinds a reader has a member document of
}

func (p Page) counters() []string {
	var out []string
	for _, post := range p.Posts {
		for _, k := range p.Kinds {
			out = append(out, k+":"+post)
		}
	}
	return out
}

// Way is one way of reading the page, measured.
type Way struct {
	Name  string         `json:"way"`
	Stats loadtest.Stats `json:"stats"`
	// Per page: calls made, and billed reads.
	Calls float64 `json:"calls_per_page"`
	Reads float64 `json:"reads_per_page"`
}

// Hot is a hot page: Readers new readers read the same page, Concurrency
// at once; the reads of each tenth of them, in order.
type Hot struct {
	Readers     int       `json:"readers"`
	Concurrency int       `json:"concurrency"`
	Reads       []float64 `json:"reads_per_page_by_tenth"`
	// CounterReads is how often a counter's document was read, at most,
	// per instance, per FeedCache of the run.
	CounterReadsPerBound float64        `json:"counter_reads_per_bound"`
	FeedCache            time.Duration  `json:"feed_cache"`
	Stats                loadtest.Stats `json:"stats"`
}

// Report is the feed's measurements.
type Report struct {
	Page int   `json:"counters_per_page"`
	Ways []Way `json:"ways"`
	// OneGetCounter is a single eventual getCounter, for its latency.
	OneGetCounter loadtest.Stats `json:"one_get_counter"`
	Hot           Hot            `json:"hot"`
}

// Prepare gives the page's counters something to count, as admin acting
// for members (likes, reactions, views, viewers), and has reader like the
// first post and react to the second; it returns once each counter is
// rolled up (by reconcileCounters, the roll-up's write path: the
// servers' project may have no trigger).
func Prepare(ctx context.Context, f *loadtest.Functions, page Page, reader string) error {
	var wg sync.WaitGroup
	errc := make(chan error, len(page.Posts))
	for i, post := range page.Posts {
		wg.Go(func() {
			for m := range 3 + i%5 {
				member := fmt.Sprintf("feed-fan-%d", m)
				for _, body := range []map[string]any{
					{"counter_id": "likes:" + post, "member": member},
					{"counter_id": "reactions:" + post, "member": member, "choice": []string{"like", "love", "wow"}[m%3]},
					{"counter_id": "views:" + post, "delta": 1 + m},
					{"counter_id": "viewers:" + post, "member": member},
				} {
					if _, err := f.Do(ctx, "POST", "incrementCounter", "", body, nil); err != nil {
						errc <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	for _, body := range []map[string]any{
		{"counter_id": "likes:" + page.Posts[0]},
		{"counter_id": "reactions:" + page.Posts[1], "choice": "love"},
	} {
		if _, err := f.DoAs(ctx, f.Bases[0], reader, "POST", "incrementCounter", "", body, nil); err != nil {
			return err
		}
	}
	for _, id := range page.counters() {
		if _, err := f.Do(ctx, "POST", "reconcileCounters", "", map[string]any{"counter_id": id}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Listeners reads the page as an app with a listener per document does:
// each counter's document and the reader's member documents, until every
// first snapshot (a billed read each) has come.
func Listeners(ctx context.Context, db *firestore.Client, page Page, uid string, pages int) Way {
	var docs []*firestore.DocumentRef
	for _, id := range page.counters() {
		docs = append(docs, db.Doc("counters/"+id))
	}
	for _, post := range page.Posts {
		for _, k := range page.MemberKinds {
			docs = append(docs, db.Doc("counters/"+k+":"+post+"/members/"+uid))
		}
	}
	stats := loadtest.Run(ctx, loadtest.Options{Concurrency: 1, Requests: int64(pages)}, func(ctx context.Context, _ int) loadtest.Outcome {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var wg sync.WaitGroup
		var failed sync.Once
		ok := true
		for _, d := range docs {
			wg.Go(func() {
				it := d.Snapshots(ctx)
				defer it.Stop()
				if _, err := it.Next(); err != nil {
					failed.Do(func() { ok = false })
				}
			})
		}
		wg.Wait()
		return loadtest.Outcome{OK: ok}
	})
	return Way{Name: fmt.Sprintf("%d listeners", len(docs)), Stats: stats, Calls: 0, Reads: float64(len(docs))}
}

// GetCounterEach reads the page as an app with a getCounter per counter
// does (as reader: the member documents come with them), 16 at once as a
// browser sends them.
func GetCounterEach(ctx context.Context, f *loadtest.Functions, page Page, reader string, pages int) (Way, error) {
	ids := page.counters()
	reads, err := readsOf(ctx, f, "read", func() loadtest.Stats {
		return loadtest.Run(ctx, loadtest.Options{Concurrency: 1, Requests: int64(pages)}, func(ctx context.Context, _ int) loadtest.Outcome {
			sem := make(chan struct{}, 16)
			var wg sync.WaitGroup
			var mu sync.Mutex
			ok := true
			for _, id := range ids {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					if _, err := f.DoAs(ctx, f.Bases[0], reader, "GET", "getCounter", "?counter_id="+id, nil, nil); err != nil {
						mu.Lock()
						ok = false
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			return loadtest.Outcome{OK: ok}
		})
	})
	return Way{Name: fmt.Sprintf("%d getCounter calls", len(ids)), Stats: reads.stats, Calls: float64(len(ids)), Reads: reads.perPage(pages)}, err
}

// GetCounters reads the page in one call, each page as a new reader (of
// readers, in turn) whose counts are warm: the instance read them
// within FEED_CACHE for someone else.
func GetCounters(ctx context.Context, f *loadtest.Functions, page Page, readers []string, pages int) (Way, error) {
	body := map[string]any{"keys": page.Posts, "kinds": page.Kinds}
	warm := func(ctx context.Context) error {
		_, err := f.DoAs(ctx, f.Bases[0], "", "POST", "getCounters", "", body, nil)
		return err
	}
	var n int
	var mu sync.Mutex
	reads, err := readsOf(ctx, f, "feed", func() loadtest.Stats {
		return loadtest.Run(ctx, loadtest.Options{Concurrency: 1, Requests: int64(pages)}, func(ctx context.Context, _ int) loadtest.Outcome {
			mu.Lock()
			reader := readers[n%len(readers)]
			n++
			mu.Unlock()
			_, err := f.DoAs(ctx, f.Bases[0], reader, "POST", "getCounters", "", body, nil)
			return loadtest.Outcome{OK: err == nil}
		})
	}, warm)
	return Way{Name: "1 getCounters call", Stats: reads.stats, Calls: 1, Reads: reads.perPage(pages)}, err
}

// CountsAlone reads the page in one call as a caller with no uid (an
// app's backend): its counts alone, warm, with no reader's state to query.
func CountsAlone(ctx context.Context, f *loadtest.Functions, page Page, pages int) (Way, error) {
	body := map[string]any{"keys": page.Posts, "kinds": page.Kinds}
	call := func(ctx context.Context) error {
		_, err := f.DoAs(ctx, f.Bases[0], "", "POST", "getCounters", "", body, nil)
		return err
	}
	reads, err := readsOf(ctx, f, "feed", func() loadtest.Stats {
		return loadtest.Run(ctx, loadtest.Options{Concurrency: 1, Requests: int64(pages)}, func(ctx context.Context, _ int) loadtest.Outcome {
			return loadtest.Outcome{OK: call(ctx) == nil}
		})
	}, call)
	return Way{Name: "1 getCounters call, the counts alone (no reader)", Stats: reads.stats, Calls: 1, Reads: reads.perPage(pages)}, err
}

// OneGetCounter times single eventual reads of one counter.
func OneGetCounter(ctx context.Context, f *loadtest.Functions, id, reader string, n int) loadtest.Stats {
	return loadtest.Run(ctx, loadtest.Options{Concurrency: 1, Requests: int64(n)}, func(ctx context.Context, _ int) loadtest.Outcome {
		_, err := f.DoAs(ctx, f.Bases[0], reader, "GET", "getCounter", "?counter_id="+id, nil, nil)
		return loadtest.Outcome{OK: err == nil}
	})
}

// HotPage has readers read the page, concurrency at once, and reports the
// billed reads of each tenth of them: the first pay for the counts, the
// others only for their own state, and the counts again once per
// FEED_CACHE.
func HotPage(ctx context.Context, f *loadtest.Functions, page Page, readers []string, concurrency int, feedCache time.Duration) (Hot, error) {
	body := map[string]any{"keys": page.Posts, "kinds": page.Kinds}
	h := Hot{Readers: len(readers), Concurrency: concurrency, FeedCache: feedCache}
	tenth := max(1, len(readers)/10)
	start := time.Now()
	var totalReads int64
	for done := 0; done < len(readers); done += tenth {
		batch := readers[done:min(done+tenth, len(readers))]
		var next sync.Mutex
		i := 0
		r, err := readsOf(ctx, f, "feed", func() loadtest.Stats {
			return loadtest.Run(ctx, loadtest.Options{Concurrency: concurrency, Requests: int64(len(batch))}, func(ctx context.Context, _ int) loadtest.Outcome {
				next.Lock()
				reader := batch[i]
				i++
				next.Unlock()
				_, err := f.DoAs(ctx, f.Bases[0], reader, "POST", "getCounters", "", body, nil)
				return loadtest.Outcome{OK: err == nil}
			})
		})
		if err != nil {
			return h, err
		}
		h.Reads = append(h.Reads, r.perPage(len(batch)))
		totalReads += r.reads
		h.Stats = r.stats
	}
	// Every page reads its reader's member documents (a query per 30
	// counters of members, at least a read each); the rest are counters'
	// documents, once per FEED_CACHE at most.
	queries := (len(page.Posts)*len(page.MemberKinds) + 29) / 30
	counterReads := float64(totalReads - int64(len(readers)*queries))
	bounds := max(1, time.Since(start).Seconds()/feedCache.Seconds())
	h.CounterReadsPerBound = counterReads / float64(len(page.counters())) / bounds
	return h, nil
}

// counted is a run and the reads the server counted under one label.
type counted struct {
	stats loadtest.Stats
	reads int64
}

func (c counted) perPage(pages int) float64 { return float64(c.reads) / float64(max(pages, 1)) }

// readsOf runs run, after each of before, and returns what the function
// servers counted as read under label meanwhile.
func readsOf(ctx context.Context, f *loadtest.Functions, label string, run func() loadtest.Stats, before ...func(context.Context) error) (counted, error) {
	for _, b := range before {
		if err := b(ctx); err != nil {
			return counted{}, err
		}
	}
	s0, err := f.Stats(ctx)
	if err != nil {
		return counted{}, err
	}
	stats := run()
	s1, err := f.Stats(ctx)
	if err != nil {
		return counted{}, err
	}
	return counted{stats: stats, reads: s1.Firestore[label].Reads - s0.Firestore[label].Reads}, nil
}

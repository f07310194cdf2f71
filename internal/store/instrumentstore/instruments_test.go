package instrumentstore_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	. "github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/store/instrumentstore"
)

// fieldValues lists each query field's values with their weights; one value
// per field is rare, so it can be paged through to the end even one
// document at a time.
var fieldValues = map[string][]weighted{
	"instrumentType": {{"commonstock", 50}, {"etf", 30}, {"bond", 18}, {"fx", 2}},
	"exchange":       {{"EXCHG1", 45}, {"EXCHG2", 35}, {"EXCHG3", 18}, {"EXCHG4", 2}},
	"price.currency": {{"USD", 60}, {"JPY", 38}, {"EUR", 2}},
}

type weighted struct {
	value  string
	weight int
}

func pick(field string) string {
	n := rand.IntN(100)
	for _, w := range fieldValues[field] {
		if n -= w.weight; n < 0 {
			return w.value
		}
	}
	panic("weights do not add up to 100")
}

func valueOf(in Instrument, field string) string {
	switch field {
	case "instrumentType":
		return in.InstrumentType
	case "exchange":
		return in.Exchange
	}
	return in.Price.Currency
}

// randomInstruments makes n instruments whose timestamps take 300 values,
// so about n/300 documents share each.
func randomInstruments(n int) []Instrument {
	t0 := time.Date(2019, 1, 1, 13, 45, 23, 0, time.UTC)
	out := make([]Instrument, n)
	for i := range out {
		out[i] = Instrument{
			Symbol:         fmt.Sprintf("SYM%d", rand.IntN(50)),
			Price:          Price{Currency: pick("price.currency"), Micros: rand.Int64N(1e11)},
			Exchange:       pick("exchange"),
			InstrumentType: pick("instrumentType"),
			Timestamp:      t0.Add(time.Duration(rand.IntN(300)) * 10 * time.Millisecond),
		}
	}
	return out
}

// seed stores docs in a fresh project with numShards shards.
func seed(t *testing.T, numShards int, docs []Instrument) *instrumentstore.Store {
	t.Helper()
	s := instrumentstore.New(testenv.DB(t, testenv.NewProjectID("inst")), numShards, []byte("test secret"))
	for batch := range slices.Chunk(docs, MaxBatch) {
		ids, err := s.Record(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			batch[i].ID = id
		}
	}
	return s
}

// TestPagingMatchesAnUnshardedSort pages through every query field and value
// of 600 documents, with 3 shards (one "in" chunk) and 64 (three chunks),
// and compares with a plain sort of the same data: same documents, same
// order, no duplicates, no gaps.
//
// The emulator answers these queries in about 45 ms with 3 shards and
// 250 ms with 64 (an "in" of 30 values costs it 30 scans), so walking every
// page one document at a time would take a quarter of an hour. Where a walk is
// capped at maxPages, the pages walked must equal the start of the expected
// order; the rare value of each field (about 12 documents) is always walked
// to its end, and limit 100 walks every value to its end.
func TestPagingMatchesAnUnshardedSort(t *testing.T) {
	t.Parallel()
	docs := randomInstruments(600)
	const all = 1 << 30
	for _, tc := range []struct {
		shards int
		walks  []walk
	}{
		{3, []walk{{limit: 100, maxPages: all}, {limit: 7, maxPages: 20}, {limit: 1, maxPages: 20}}},
		{64, []walk{{limit: 100, maxPages: all}, {limit: 7, maxPages: 8}, {limit: 1, maxPages: 8}}},
	} {
		t.Run(fmt.Sprintf("%d shards", tc.shards), func(t *testing.T) {
			t.Parallel()
			mine := slices.Clone(docs)
			s := seed(t, tc.shards, mine)
			if n := len(s.Collection().Chunks()); n != (tc.shards+29)/30 {
				t.Fatalf("%d chunks for %d shards", n, tc.shards)
			}
			var wg sync.WaitGroup
			sem := make(chan struct{}, 4)
			for _, field := range QueryFields {
				for _, v := range fieldValues[field] {
					want := expected(mine, field, v.value)
					for _, w := range tc.walks {
						maxPages := w.maxPages
						if len(want) <= 50 {
							maxPages = all
						}
						wg.Go(func() {
							sem <- struct{}{}
							defer func() { <-sem }()
							got, complete := pageThrough(t, s, field, v.value, w.limit, maxPages)
							if complete && len(got) != len(want) || !slices.Equal(got, want[:min(len(got), len(want))]) {
								t.Errorf("%s=%s limit %d: got %d ids (complete=%v), want %d; first difference at %d",
									field, v.value, w.limit, len(got), complete, len(want), firstDiff(got, want))
							}
						})
					}
				}
			}
			wg.Wait()
		})
	}
}

type walk struct{ limit, maxPages int }

func expected(docs []Instrument, field, value string) []string {
	var match []Instrument
	for _, d := range docs {
		if valueOf(d, field) == value {
			match = append(match, d)
		}
	}
	slices.SortFunc(match, func(a, b Instrument) int {
		if c := b.Timestamp.Compare(a.Timestamp); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	ids := make([]string, len(match))
	for i, d := range match {
		ids[i] = d.ID
	}
	return ids
}

// pageThrough follows next-page tokens for at most maxPages pages and
// reports whether it reached the last page.
func pageThrough(t *testing.T, s *instrumentstore.Store, field, value string, limit, maxPages int) ([]string, bool) {
	var ids []string
	token := ""
	for pages := 0; pages < maxPages; pages++ {
		page, next, err := s.Query(context.Background(), field, value, limit, token)
		if err != nil {
			t.Errorf("%s=%s limit %d page %d: %v", field, value, limit, pages, err)
			return ids, false
		}
		if len(page) > limit || (next != "" && len(page) != limit) {
			t.Errorf("page of %d with limit %d and next token %q", len(page), limit, next)
		}
		for _, in := range page {
			if valueOf(in, field) != value {
				t.Errorf("%s=%s returned %+v", field, value, in)
			}
			ids = append(ids, in.ID)
		}
		if next == "" {
			return ids, true
		}
		token = next
	}
	return ids, false
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestPageTokenIsBoundToItsQuery(t *testing.T) {
	t.Parallel()
	docs := randomInstruments(30)
	s := seed(t, 3, docs)
	_, next, err := s.Query(context.Background(), "price.currency", docs[0].Price.Currency, 1, "")
	if n := len(expected(docs, "price.currency", docs[0].Price.Currency)); n < 2 {
		t.Skip("one matching document: no second page") // rare with 30 documents
	}
	if err != nil || next == "" {
		t.Fatalf("first page: next %q, err %v", next, err)
	}
	for name, tc := range map[string]struct{ field, value, token string }{
		"other value":   {"price.currency", "XXX", next},
		"other field":   {"exchange", docs[0].Price.Currency, next},
		"garbage":       {"price.currency", docs[0].Price.Currency, "not-a-token"},
		"truncated":     {"price.currency", docs[0].Price.Currency, next[:len(next)-2]},
		"one char off":  {"price.currency", docs[0].Price.Currency, flip(next, len(next)/2)},
		"first char":    {"price.currency", docs[0].Price.Currency, flip(next, 0)},
		"trailing junk": {"price.currency", docs[0].Price.Currency, next + "AA"},
	} {
		_, _, err := s.Query(context.Background(), tc.field, tc.value, 1, tc.token)
		if !errs.Is(err, errs.InvalidArgument) || !strings.Contains(err.Error(), "page_token") {
			t.Errorf("%s: err = %v, want INVALID_ARGUMENT naming page_token", name, err)
		}
	}
}

func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

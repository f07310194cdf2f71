package core

import (
	"net/url"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/increment"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/windows"
	"github.com/shardcount/shardcount/internal/wire"
)

// The fuzz targets drive the request decoding and validation of every HTTP
// function. No input may panic, and every rejection must be a client error
// (4xx): a 5xx would mean a bad request reached code that trusts it. Seed
// corpora live in testdata/fuzz; `go test` replays them, and
// `go test -fuzz=<target> ./internal/core` explores further (docs/security.md,
// "Fuzzing").

func clientError(t *testing.T, err error) {
	t.Helper()
	if err != nil && httpapi.Status(err) >= 500 {
		t.Fatalf("status %d for a bad request: %v", httpapi.Status(err), err)
	}
}

func FuzzCreateCounterRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1","num_shards":10}`))
	f.Add([]byte(`{"followers_count":2500,"post_type":"protected"}`))
	f.Add([]byte(`{"followers_count":9223372036854775807}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b wire.CreateCounterRequest
		if err := httpapi.Unmarshal(body, &b); err != nil {
			clientError(t, err)
			return
		}
		for _, maxShards := range []int{counter.MaxShards, 100} {
			c, err := counterToCreate(b, maxShards)
			clientError(t, err)
			if err == nil && (counter.ValidateID(c.ID) != nil || c.NumShards < counter.MinShards || c.NumShards > maxShards) {
				t.Fatalf("accepted id %q with %d shards (at most %d)", c.ID, c.NumShards, maxShards)
			}
			if err == nil && b.NumShards == nil && b.FollowersCount != nil && *b.FollowersCount > 1_000_000_000 && c.NumShards != maxShards {
				t.Fatalf("%d followers got %d shards", *b.FollowersCount, c.NumShards)
			}
		}
	})
}

func FuzzIncrementCounterRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1","delta":-3}`), "key-1")
	f.Add([]byte(`{"counter_id":"post-1","action_type":"decrement"}`), "")
	f.Add([]byte(`{"increments":[{"counter_id":"a","delta":2,"idempotency_key":"k"},{"counter_id":"b"}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		hk := &key
		if key == "" {
			hk = nil
		}
		clientError(t, increment.ValidateKey("Idempotency-Key", hk))
		var b wire.IncrementCounterRequest
		if err := httpapi.Unmarshal(body, &b); err != nil {
			clientError(t, err)
			return
		}
		for _, it := range append(b.Increments, b.IncrementItem) {
			id, op, err := validateItem(it, hk)
			clientError(t, err)
			if err == nil && (counter.ValidateID(id) != nil || counter.ValidateDelta(op.Delta) != nil || op.Key != "" && increment.ValidateKey("k", &op.Key) != nil) {
				t.Fatalf("accepted id %q with %+v", id, op)
			}
		}
	})
}

func FuzzGetCounterQuery(f *testing.F) {
	f.Add("counter_id=post-1&consistency=strong")
	f.Add("counter_id=a&counter_id=b")
	f.Add("counter_id=a&history=minute&from=2026-11-23T05:00:00Z&to=2026-11-23T06:00:00%2B01:00")
	f.Add("counter_id=a&history=day&from=1970-01-01T00:00:00Z")
	f.Add("counter_id=a&history=minute&from=0000-12-31T23:00:00Z&to=0000-12-31T23:30:00Z")
	// A default span back from year 1 reached year 0: a 500 from Firestore.
	f.Add("counter_id=a&history=day&to=0001-01-01T00:00:00Z")
	f.Add("counter_id=a&history=minute&to=0001-01-01T00:10:00Z")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // net/http answers 400 before the function runs
		}
		var b wire.GetCounterRequest
		if err := httpapi.UnmarshalQuery(q, &b); err != nil {
			clientError(t, err)
			return
		}
		id, consistency, h, err := validateRead(b, windows.UTC, time.Now())
		clientError(t, err)
		if err == nil && (counter.ValidateID(id) != nil || consistency != "strong" && consistency != "eventual") {
			t.Fatalf("accepted %q, %q", id, consistency)
		}
		if err == nil && h != nil && (len(h.Starts) < 1 || len(h.Starts) > windows.MaxBuckets) {
			t.Fatalf("accepted a history of %d buckets", len(h.Starts))
		}
		if err == nil && h != nil {
			if first, last := h.Starts[0].Year(), h.Starts[len(h.Starts)-1].Year(); first < 1 || last > 9999 {
				t.Fatalf("accepted buckets from year %d to %d: Firestore has no such timestamps", first, last)
			}
		}
	})
}

func FuzzReshardCounterRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1","num_shards":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b wire.ReshardCounterRequest
		clientError(t, httpapi.Unmarshal(body, &b))
	})
}

func FuzzResetCounterRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1","count":3}`))
	f.Add([]byte(`{"counter_id":"post-1","count":9007199254740992}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b wire.ResetCounterRequest
		clientError(t, httpapi.Unmarshal(body, &b))
	})
}

func FuzzListCountersQuery(f *testing.F) {
	f.Add("limit=5&page_token=post-1&owner=alice")
	f.Add("page_token=%FF%FE")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		var b wire.ListCountersRequest
		if err := httpapi.UnmarshalQuery(q, &b); err != nil {
			clientError(t, err)
			return
		}
		for _, s := range []*string{b.PageToken, b.Owner} {
			if s != nil && !utf8.ValidString(*s) {
				t.Fatalf("accepted %q: Firestore refuses strings that are not UTF-8", *s)
			}
		}
		n, err := limitOf(b.Limit, 20)
		clientError(t, err)
		if err == nil && (n < 1 || n > maxListLimit) {
			t.Fatalf("accepted limit %d", n)
		}
	})
}

func FuzzTopCountersQuery(f *testing.F) {
	f.Add("window=hour&limit=10&previous=true")
	f.Add("window=all")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		var b wire.TopCountersRequest
		clientError(t, httpapi.UnmarshalQuery(q, &b))
	})
}

func FuzzRecordInstrumentsRequest(f *testing.F) {
	f.Add([]byte(`{"instruments":[{"symbol":"AAA","price":{"currency":"USD","micros":34790000},"exchange":"EXCHG1","instrumentType":"commonstock","timestamp":"2019-01-01T13:45:23.010Z"}]}`))
	f.Add([]byte(`{"instruments":[{"symbol":"A","price":{"currency":"USD","micros":1},"exchange":"E","instrumentType":"t","timestamp":"0001-01-01T00:30:00+01:00"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b wire.RecordInstrumentsRequest
		if err := httpapi.Unmarshal(body, &b); err != nil {
			clientError(t, err)
			return
		}
		batch, err := instruments.ValidateBatch(b.Instruments)
		clientError(t, err)
		for _, in := range batch {
			if y := in.Timestamp.Year(); y < 1 || y > 9999 || in.Timestamp.Location() != time.UTC || in.Price.Micros < 0 {
				t.Fatalf("accepted %+v", in)
			}
		}
	})
}

func FuzzQueryInstrumentsQuery(f *testing.F) {
	f.Add("field=exchange&value=EXCHG1&limit=7&page_token=AQID")
	f.Add("field=price.currency&value=USD")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		var b wire.QueryInstrumentsRequest
		if err := httpapi.UnmarshalQuery(q, &b); err != nil {
			clientError(t, err)
			return
		}
		_, _, limit, _, err := validateQuery(b)
		clientError(t, err)
		if err == nil && (limit < 1 || limit > instruments.MaxLimit) {
			t.Fatalf("accepted limit %d", limit)
		}
	})
}

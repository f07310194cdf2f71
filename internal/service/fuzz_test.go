package service

import (
	"net/url"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/instruments"
)

// The fuzz targets drive the request decoding and validation of every HTTP
// function. No input may panic, and every rejection must be a client error
// (4xx): a 5xx would mean a bad request reached code that trusts it. Seed
// corpora live in testdata/fuzz; `go test` replays them, and
// `go test -fuzz=<target> ./internal/service` explores further (README
// "Security").

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
		var b CreateCounterRequest
		if err := httpapi.Unmarshal(body, &b); err != nil {
			clientError(t, err)
			return
		}
		id, shards, err := b.counterToCreate()
		clientError(t, err)
		if err == nil && (counter.ValidateID(id) != nil || shards < counter.MinShards || shards > counter.MaxShards) {
			t.Fatalf("accepted id %q with %d shards", id, shards)
		}
		if err == nil && b.NumShards == nil && b.FollowersCount != nil && *b.FollowersCount > 1_000_000_000 && shards != counter.MaxShards {
			t.Fatalf("%d followers got %d shards", *b.FollowersCount, shards)
		}
	})
}

func FuzzIncrementCounterRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1","delta":-3}`), "key-1")
	f.Add([]byte(`{"counter_id":"post-1","action_type":"decrement"}`), "")
	f.Add([]byte(`{"increments":[{"counter_id":"a","delta":2,"idempotency_key":"k"},{"counter_id":"b"}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		clientError(t, validateKey("Idempotency-Key", key, false))
		var b IncrementCounterRequest
		if err := httpapi.Unmarshal(body, &b); err != nil {
			clientError(t, err)
			return
		}
		for _, it := range append(b.Increments, b.IncrementItem) {
			id, op, err := it.validate(key)
			clientError(t, err)
			if err == nil && (counter.ValidateID(id) != nil || counter.ValidateDelta(op.Delta) != nil || validateKey("k", op.Key, false) != nil) {
				t.Fatalf("accepted id %q with %+v", id, op)
			}
		}
	})
}

func FuzzGetCounterQuery(f *testing.F) {
	f.Add("counter_id=post-1&consistency=strong")
	f.Add("counter_id=a&counter_id=b")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // net/http answers 400 before the function runs
		}
		var b GetCounterRequest
		if err := httpapi.UnmarshalQuery(q, &b); err != nil {
			clientError(t, err)
			return
		}
		id, consistency, err := b.validate()
		clientError(t, err)
		if err == nil && (counter.ValidateID(id) != nil || consistency != "strong" && consistency != "eventual") {
			t.Fatalf("accepted %q, %q", id, consistency)
		}
	})
}

func FuzzReshardCounterRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1","num_shards":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b ReshardCounterRequest
		clientError(t, httpapi.Unmarshal(body, &b))
	})
}

func FuzzReconcileRequest(f *testing.F) {
	f.Add([]byte(`{"counter_id":"post-1"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b ReconcileRequest
		clientError(t, httpapi.Unmarshal(body, &b))
	})
}

func FuzzRecordInstrumentsRequest(f *testing.F) {
	f.Add([]byte(`{"instruments":[{"symbol":"AAA","price":{"currency":"USD","micros":34790000},"exchange":"EXCHG1","instrumentType":"commonstock","timestamp":"2019-01-01T13:45:23.010Z"}]}`))
	f.Add([]byte(`{"instruments":[{"symbol":"A","price":{"currency":"USD","micros":1},"exchange":"E","instrumentType":"t","timestamp":"0001-01-01T00:30:00+01:00"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b RecordInstrumentsRequest
		if err := httpapi.Unmarshal(body, &b); err != nil {
			clientError(t, err)
			return
		}
		batch, err := b.batch()
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
		var b QueryInstrumentsRequest
		if err := httpapi.UnmarshalQuery(q, &b); err != nil {
			clientError(t, err)
			return
		}
		_, _, limit, _, err := b.validate()
		clientError(t, err)
		if err == nil && (limit < 1 || limit > instruments.MaxLimit) {
			t.Fatalf("accepted limit %d", limit)
		}
	})
}

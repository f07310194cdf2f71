package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Work per byte: nothing a caller sends may cost more than a bounded time
// per byte of it. FuzzEdgeTime fails on time, not only on panics: an
// input that takes longer than perByte for each of its bytes (plus a fixed
// allowance) is a finding, saved in testdata/fuzz/FuzzEdgeTime with the
// others. scripts/test.sh fuzzes it for a bounded time; the corpus runs
// with every go test.
const (
	perByte = 5 * time.Microsecond * raceSlowdown
	fixed   = 5 * time.Millisecond * raceSlowdown
)

// items is a body with the shapes the functions decode: lists of objects
// with integers and strings.
type items struct {
	ID    *string `json:"counter_id"`
	Delta *int64  `json:"delta"`
	List  []struct {
		ID    *string `json:"counter_id"`
		Delta *int64  `json:"delta"`
		Key   *string `json:"idempotency_key"`
	} `json:"increments"`
}

func decodeItems(_ context.Context, req *Request) (int, any, error) {
	var b items
	if err := req.Decode(&b); err != nil {
		return 0, nil, err
	}
	return 200, map[string]int{"items": len(b.List)}, nil
}

// timeOf returns how long body takes through h, as a plain request and
// as a callable, whichever is slower: for each form the least of three
// runs, so a scheduler's hiccup is not a finding.
func timeOf(h http.HandlerFunc, body []byte) time.Duration {
	var worst time.Duration
	for _, b := range [][]byte{body, append(append([]byte(`{"data":`), body...), '}')} {
		best := time.Hour
		for range 3 {
			req := httptest.NewRequest("POST", "/x", bytes.NewReader(b))
			req.Header.Set("Content-Type", ctJSON)
			start := time.Now()
			h(httptest.NewRecorder(), req)
			best = min(best, time.Since(start))
		}
		worst = max(worst, best)
	}
	return worst
}

func FuzzEdgeTime(f *testing.F) {
	for _, seed := range []string{
		`{"counter_id":"a","delta":1}`,
		`{"increments":[` + strings.TrimSuffix(strings.Repeat(`{"counter_id":"a","delta":1e999999},`, 100), ",") + `]}`,
		`{"x":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 1000), ",") + `]}`,
		`{"delta":1` + strings.Repeat("0", 5000) + `e-5000}`,
		`{"increments":[` + strings.TrimSuffix(strings.Repeat(`{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"1e999999"}},`, 100), ",") + `]}`,
		strings.Repeat(`{"a":`, 15) + `{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3"}` + strings.Repeat("}", 15),
		`{"counter_id":"` + strings.Repeat(`\u00e9\n`, 2000) + `"}`,
		`{` + strings.TrimSuffix(strings.Repeat(`"k":1,`, 2000), ",") + `}`,
		strings.Repeat("[", 1000),
	} {
		f.Add([]byte(seed))
	}
	e := &Edge{Logger: quietLogger()} // AUTH=off: every body is decoded
	h := serve(e, nil, Endpoint{Name: "x", Method: "POST", Public: true, MaxBody: 1 << 20}, decodeItems)
	f.Fuzz(func(t *testing.T, body []byte) {
		if took, budget := timeOf(h, body), fixed+time.Duration(len(body))*perByte; took > budget {
			t.Fatalf("%d bytes took %s, over %s (%s per byte): %.200q", len(body), took, budget, perByte, body)
		}
	})
}

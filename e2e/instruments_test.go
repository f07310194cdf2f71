package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

type instrument struct {
	ID     string `json:"id,omitempty"`
	Symbol string `json:"symbol"`
	Price  struct {
		Currency string `json:"currency"`
		Micros   int64  `json:"micros"`
	} `json:"price"`
	Exchange       string `json:"exchange"`
	InstrumentType string `json:"instrumentType"`
	Timestamp      string `json:"timestamp"`
}

func newInstrument(symbol, currency, exchange, kind string, at time.Time) instrument {
	in := instrument{Symbol: symbol, Exchange: exchange, InstrumentType: kind, Timestamp: at.Format(time.RFC3339Nano)}
	in.Price.Currency, in.Price.Micros = currency, 34790000
	return in
}

func record(t *testing.T, batch []instrument) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"instruments": batch})
	r := testenv.Do(t, "POST", url("recordInstruments"), string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("recordInstruments: %s", r)
	}
	var resp struct{ IDs []string }
	r.Decode(t, &resp)
	if len(resp.IDs) != len(batch) {
		t.Fatalf("%d ids for %d instruments", len(resp.IDs), len(batch))
	}
	return resp.IDs
}

type queryResp struct {
	Instruments   []instrument `json:"instruments"`
	NextPageToken string       `json:"next_page_token"`
}

func query(t *testing.T, params string) queryResp {
	t.Helper()
	r := testenv.Do(t, "GET", url("queryInstruments")+"?"+params, "")
	if r.Status != http.StatusOK {
		t.Fatalf("queryInstruments?%s: %s", params, r)
	}
	var q queryResp
	r.Decode(t, &q)
	return q
}

func TestRecordThenQueryInstruments(t *testing.T) {
	t.Parallel()
	// An exchange of its own, so other tests' instruments never match.
	exchange := "X" + newCounterID(t)[len(t.Name()):]
	t0 := time.Date(2019, 1, 1, 13, 45, 23, 0, time.UTC)
	var batch []instrument
	for i := range 40 {
		// Four instruments per timestamp: ties across shards.
		batch = append(batch, newInstrument(fmt.Sprintf("S%d", i), "USD", exchange, "etf", t0.Add(time.Duration(i/4)*time.Millisecond)))
	}
	ids := record(t, batch)

	fs := testenv.Firestore(t, project)
	shards := map[string]bool{}
	for _, id := range ids {
		snap, err := fs.Doc("instruments/" + id).Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		shards[snap.Data()["shard"].(string)] = true
		if got := snap.Data()["timestamp"].(time.Time); got.Before(t0) {
			t.Errorf("timestamp stored as %v", got)
		}
	}
	for s := range shards {
		if s != "0" && s != "1" && s != "2" {
			t.Errorf("shard %q outside the 3 default shard values", s)
		}
	}

	// Page through with limit 7: newest first, ties by id descending.
	var got []instrument
	params := "field=exchange&value=" + neturl.QueryEscape(exchange) + "&limit=7"
	for token := ""; ; {
		p := params
		if token != "" {
			p += "&page_token=" + neturl.QueryEscape(token)
		}
		q := query(t, p)
		got = append(got, q.Instruments...)
		if q.NextPageToken == "" {
			break
		}
		if len(q.Instruments) != 7 {
			t.Fatalf("a page before the last holds %d instruments", len(q.Instruments))
		}
		token = q.NextPageToken
	}
	if len(got) != len(batch) {
		t.Fatalf("paged %d instruments, want %d", len(got), len(batch))
	}
	seen := map[string]bool{}
	for i, in := range got {
		if seen[in.ID] {
			t.Errorf("instrument %s returned twice", in.ID)
		}
		seen[in.ID] = true
		if i > 0 {
			prev := got[i-1]
			at, _ := time.Parse(time.RFC3339Nano, in.Timestamp)
			prevAt, _ := time.Parse(time.RFC3339Nano, prev.Timestamp)
			if at.After(prevAt) || at.Equal(prevAt) && in.ID > prev.ID {
				t.Errorf("out of order at %d: %s/%s after %s/%s", i, in.Timestamp, in.ID, prev.Timestamp, prev.ID)
			}
		}
		if in.Exchange != exchange || in.Price.Currency != "USD" || in.Price.Micros != 34790000 || in.InstrumentType != "etf" {
			t.Errorf("instrument %+v", in)
		}
	}
	newest := got[0]
	if want := t0.Add(9 * time.Millisecond).Format(time.RFC3339Nano); newest.Timestamp != want {
		t.Errorf("newest timestamp %s, want %s", newest.Timestamp, want)
	}
}

func TestBadInstrumentRequestsChangeNothing(t *testing.T) {
	good := newInstrument("AAA", "USD", "EXCHG1", "commonstock", time.Now())
	one := func(edit func(map[string]any)) string {
		b, _ := json.Marshal(good)
		var m map[string]any
		json.Unmarshal(b, &m)
		edit(m)
		out, _ := json.Marshal(map[string]any{"instruments": []any{m}})
		return string(out)
	}
	many := func(n int) string {
		batch := make([]instrument, n)
		for i := range batch {
			batch[i] = good
		}
		b, _ := json.Marshal(map[string]any{"instruments": batch})
		return string(b)
	}
	cases := []struct {
		name, method, function, query, body string
		status                              int
		mention                             string
	}{
		{"record: GET", "GET", "recordInstruments", "", "", 405, "POST"},
		{"record: empty list", "POST", "recordInstruments", "", `{"instruments":[]}`, 400, "instruments"},
		{"record: no list", "POST", "recordInstruments", "", `{}`, 400, "instruments"},
		{"record: 501", "POST", "recordInstruments", "", many(501), 400, "instruments"},
		{"record: unknown field", "POST", "recordInstruments", "", one(func(m map[string]any) { m["isin"] = "x" }), 400, "isin"},
		{"record: bad time", "POST", "recordInstruments", "", one(func(m map[string]any) { m["timestamp"] = "yesterday" }), 400, "instruments[0].timestamp"},
		{"record: time without zone", "POST", "recordInstruments", "", one(func(m map[string]any) { m["timestamp"] = "2019-01-01T13:45:23" }), 400, "instruments[0].timestamp"},
		{"record: offset +24:00", "POST", "recordInstruments", "", one(func(m map[string]any) { m["timestamp"] = "2019-01-01T13:45:23+24:00" }), 400, "instruments[0].timestamp"},
		{"record: micros as string", "POST", "recordInstruments", "", one(func(m map[string]any) { m["price"] = map[string]any{"currency": "USD", "micros": "5"} }), 400, "micros"},
		{"record: fractional micros", "POST", "recordInstruments", "", one(func(m map[string]any) { m["price"] = map[string]any{"currency": "USD", "micros": 1.5} }), 400, "micros"},
		{"record: lower-case currency", "POST", "recordInstruments", "", one(func(m map[string]any) { m["price"] = map[string]any{"currency": "usd", "micros": 5} }), 400, "instruments[0].price.currency"},
		{"record: symbol number", "POST", "recordInstruments", "", one(func(m map[string]any) { m["symbol"] = 7 }), 400, "symbol"},
		{"record: missing exchange", "POST", "recordInstruments", "", one(func(m map[string]any) { delete(m, "exchange") }), 400, "instruments[0].exchange"},
		{"record: over 1 MiB", "POST", "recordInstruments", "", `{"instruments":[{"symbol":"` + strings.Repeat("a", 1<<20) + `"}]}`, 413, "bytes"},

		{"query: POST", "POST", "queryInstruments", "?field=exchange&value=EXCHG1", "", 405, "GET"},
		{"query: unknown field", "GET", "queryInstruments", "?field=symbol&value=AAA", "", 400, "field"},
		{"query: no field", "GET", "queryInstruments", "?value=AAA", "", 400, "field"},
		{"query: no value", "GET", "queryInstruments", "?field=exchange", "", 400, "value"},
		{"query: limit 0", "GET", "queryInstruments", "?field=exchange&value=EXCHG1&limit=0", "", 400, "limit"},
		{"query: limit 101", "GET", "queryInstruments", "?field=exchange&value=EXCHG1&limit=101", "", 400, "limit"},
		{"query: limit text", "GET", "queryInstruments", "?field=exchange&value=EXCHG1&limit=ten", "", 400, "limit"},
		{"query: unknown parameter", "GET", "queryInstruments", "?field=exchange&value=EXCHG1&order=asc", "", 400, "order"},
		{"query: tampered token", "GET", "queryInstruments", "?field=exchange&value=EXCHG1&page_token=AQIDBAUG", "", 400, "page_token"},
	}
	fs := testenv.Firestore(t, project)
	before, err := fs.Collection("instruments").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		r := testenv.Do(t, tc.method, url(tc.function)+tc.query, tc.body)
		var body struct {
			Error struct{ Code, Message string }
		}
		r.Decode(t, &body)
		if r.Status != tc.status || !strings.Contains(body.Error.Message, tc.mention) {
			t.Errorf("%s: got %s, want %d mentioning %q", tc.name, r, tc.status, tc.mention)
		}
	}
	after, err := fs.Collection("instruments").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("bad requests wrote %d instruments", len(after)-len(before))
	}
}

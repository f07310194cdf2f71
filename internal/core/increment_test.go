package core

import (
	"runtime"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/wire"
)

// TestItemsStopAtTheLimit: a list of increments is refused at its 501st
// item, as it is reached: a body of 600 fails there, whatever comes after
// (here an item that is not even valid); 500 pass; an empty list is not a
// single increment; an item's error names it.
func TestItemsStopAtTheLimit(t *testing.T) {
	items := func(n int, tail string) string {
		return `{"increments":[` + strings.TrimSuffix(strings.Repeat(`{"counter_id":"c"},`, n), ",") + tail + `]}`
	}
	for _, tc := range []struct {
		name, body string
		n          int
		err        string
	}{
		{"500", items(500, ""), 500, ""},
		{"the 501st refused before it is read", items(600, `,{"counter_id":1}`), 0, "increments must hold 1 to 500 items, got more"},
		{"an empty list", `{"increments":[]}`, 0, ""},
		{"an item's error names it", items(3, `,{"delta":"x"}`), 0, "increments[3].delta must be an integer"},
		{"not a list", `{"increments":{}}`, 0, "increments must be an array"},
	} {
		var b wire.IncrementCounterRequest
		err := httpapi.Unmarshal([]byte(tc.body), &b)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || len(b.Increments) != tc.n || b.Increments == nil):
			t.Errorf("%s: %d items (nil %v), %v; want %d", tc.name, len(b.Increments), b.Increments == nil, err, tc.n)
		}
	}
}

// TestInstrumentsStopAtTheLimit: recordInstruments' list is refused at its
// 501st instrument, as it is reached. Decoded whole, a megabyte of {}
// (350,000 instruments) took 69 MB for one token of call.
func TestInstrumentsStopAtTheLimit(t *testing.T) {
	var b wire.RecordInstrumentsRequest
	body := `{"instruments":[` + strings.Repeat(`{},`, 350_000) + `{}]}`
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := httpapi.Unmarshal([]byte(body), &b)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "instruments must hold 1 to 500 items, got more") {
		t.Errorf("350,001 instruments: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("350,001 instruments took %d MB to refuse", grew>>20)
	}
	if err := httpapi.Unmarshal([]byte(`{"instruments":[`+strings.Repeat(`{},`, 499)+`{}]}`), &b); err != nil || len(b.Instruments) != 500 {
		t.Errorf("500 instruments: %d, %v", len(b.Instruments), err)
	}
}

package instruments

import (
	"strings"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

func TestValidate(t *testing.T) {
	str := func(s string) *string { return &s }
	i64 := func(n int64) *int64 { return &n }
	good := Input{
		Symbol: str("AAA"), Price: &PriceInput{Currency: str("USD"), Micros: i64(34790000)},
		Exchange: str("EXCHG1"), InstrumentType: str("commonstock"), Timestamp: str("2019-01-01T13:45:23.010123456Z"),
	}
	in, err := good.Validate(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2019, 1, 1, 13, 45, 23, 10123000, time.UTC); !in.Timestamp.Equal(want) {
		t.Errorf("timestamp = %v, want %v (cut to microseconds)", in.Timestamp, want)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Input)
	}{
		{"instruments[4].symbol", func(in *Input) { in.Symbol = nil }},
		{"instruments[4].symbol", func(in *Input) { in.Symbol = str(strings.Repeat("x", 129)) }},
		{"instruments[4].exchange", func(in *Input) { in.Exchange = str("") }},
		{"instruments[4].instrumentType", func(in *Input) { in.InstrumentType = str("\xff") }},
		{"instruments[4].price", func(in *Input) { in.Price = nil }},
		{"instruments[4].price.currency", func(in *Input) { in.Price = &PriceInput{Currency: str("usd"), Micros: i64(1)} }},
		{"instruments[4].price.micros", func(in *Input) { in.Price = &PriceInput{Currency: str("USD"), Micros: i64(-1)} }},
		{"instruments[4].price.micros", func(in *Input) { in.Price = &PriceInput{Currency: str("USD")} }},
		{"instruments[4].timestamp", func(in *Input) { in.Timestamp = str("2019-01-01 13:45:23") }},
		{"instruments[4].timestamp", func(in *Input) { in.Timestamp = nil }},
		// In range with their offset, out of Firestore's range in UTC.
		{"instruments[4].timestamp", func(in *Input) { in.Timestamp = str("0001-01-01T00:30:00+01:00") }},
		{"instruments[4].timestamp", func(in *Input) { in.Timestamp = str("9999-12-31T23:59:59-01:00") }},
	} {
		in := good
		tc.edit(&in)
		_, err := in.Validate(4)
		if !errs.Is(err, errs.InvalidArgument) || !strings.HasPrefix(err.(*errs.Error).Message, tc.field+" ") {
			t.Errorf("want an error naming %s, got %v", tc.field, err)
		}
	}
}

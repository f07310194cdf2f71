package httpapi

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The payloads are exactly as the SDKs write them: FunctionsSerializer of
// firebase-ios-sdk wraps a Swift Int (long long) and UInt64, and that of
// firebase-android-sdk a Long, as below; some send an integral double.
// They decode in one pass, as a callable's data.
func TestCallableIntegers(t *testing.T) {
	type item struct {
		Delta *int64 `json:"delta"`
	}
	type body struct {
		CounterID      *string `json:"counter_id"`
		Delta          *int64  `json:"delta"`
		NumShards      *int64  `json:"num_shards"`
		FollowersCount *int64  `json:"followers_count"`
		Limit          *int    `json:"limit"`
		Increments     []item  `json:"increments"`
	}
	wrap := func(t, v string) string {
		return `{"@type":"type.googleapis.com/google.protobuf.` + t + `","value":"` + v + `"}`
	}
	for _, tc := range []struct{ in, want, err string }{
		{`{"counter_id":"p","delta":` + wrap("Int64Value", "3") + `}`, `delta=3`, ""},
		{`{"num_shards":` + wrap("UInt64Value", "10") + `}`, `num_shards=10`, ""},
		{`{"followers_count":` + wrap("Int64Value", "-9223372036854775808") + `}`, `followers_count=-9223372036854775808`, ""},
		{`{"increments":[{"delta":` + wrap("Int64Value", "-1") + `},{"delta":2.0}]}`, `increments=-1,2`, ""},
		{`{"limit":3.0,"num_shards":3e2}`, `limit=3 num_shards=300`, ""},
		{`{"delta":{"value":"3","@type":"type.googleapis.com/google.protobuf.Int64Value"}}`, `delta=3`, ""},
		// Not integers: refused, naming the field.
		{`{"delta":1.5}`, "", "delta must be an integer (int64)"},
		{`{"delta":1e400}`, "", "delta must be an integer (int64)"},
		{`{"delta":` + wrap("Int64Value", "3.5") + `}`, "", "delta must be an integer (int64)"},
		{`{"num_shards":` + wrap("UInt64Value", "18446744073709551615") + `}`, "", "num_shards must be an integer (int64)"},
		{`{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3","extra":1}}`, "", "delta must be an integer (int64)"},
		{`{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","@type":"x"}}`, "", "delta.@type is given more than once"},
		{`{"delta":"3"}`, "", "delta must be an integer (int64)"},
		{`{"a":1}`, "", "a is not a known field"},
	} {
		var b body
		err := unmarshal([]byte(tc.in), &b, callableIntegers)
		var got []string
		for _, f := range []struct {
			name string
			v    *int64
		}{{"delta", b.Delta}, {"num_shards", b.NumShards}, {"followers_count", b.FollowersCount}} {
			if f.v != nil {
				got = append(got, fmt.Sprintf("%s=%d", f.name, *f.v))
			}
		}
		if b.Limit != nil {
			got = append([]string{fmt.Sprintf("limit=%d", *b.Limit)}, got...)
		}
		if b.Increments != nil {
			var ds []string
			for _, it := range b.Increments {
				ds = append(ds, fmt.Sprint(*it.Delta))
			}
			got = append(got, "increments="+strings.Join(ds, ","))
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.in, strings.Join(got, " "), err, tc.want)
		}
	}
}

func TestWrapIntegers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"result":{"count":9007199254740992}}`, `{"result":{"count":9007199254740992}}`},
		{`{"result":{"count":9007199254740993,"n":[-9007199254740993,1.5]}}`,
			`{"result":{"count":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"9007199254740993"},"n":[{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"-9007199254740993"},1.5]}}`},
	} {
		if got := string(wrapIntegers([]byte(tc.in))); got != tc.want+"\n" {
			t.Errorf("wrapIntegers(%s)\n = %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestExactInt64(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"3", "3", true}, {"-3", "-3", true}, {"3.0", "3", true}, {"3e2", "300", true}, {"3E+2", "300", true},
		{"300e-2", "3", true}, {"-0.0", "0", true}, {"0e999999999999", "0", true}, {"0.000e-5", "0", true},
		{"9223372036854775807", "9223372036854775807", true}, {"9.223372036854775807e18", "9223372036854775807", true},
		{"-9.223372036854775808e18", "-9223372036854775808", true},
		{"9.223372036854775808e18", "", false}, {"1e19", "", false}, {"1.5", "", false}, {"15e-1", "", false},
		{"1e999999", "", false}, {"1e-999999", "", false}, {"1e99999999999999999999", "", false},
		{"1" + strings.Repeat("0", 5000) + "e-5000", "1", true},
		{"0." + strings.Repeat("0", 5000) + "1e5001", "1", true},
	} {
		got, ok := exactInt64(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("exactInt64(%.40q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestExactInt64AgreesWithBigRat compares the linear-time reading with an
// exact one (big.Rat) on numbers whose exponents big.Rat handles quickly.
func TestExactInt64AgreesWithBigRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		if rng.IntN(3) == 0 {
			return strings.TrimRight(string(b), "123456789") + "0" // trailing zeros
		}
		return string(b)
	}
	for range 20000 {
		s := strings.TrimLeft(digits(1+rng.IntN(22)), "0") // JSON: no leading zero
		if s == "" {
			s = "0"
		}
		if rng.IntN(2) == 0 {
			s += "." + digits(rng.IntN(6))
		}
		if rng.IntN(2) == 0 {
			s += fmt.Sprintf("e%d", rng.IntN(50)-25)
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		want, wantOK := "", false
		if r, ok := new(big.Rat).SetString(s); ok && r.IsInt() && r.Num().IsInt64() {
			want, wantOK = r.Num().String(), true
		}
		if got, ok := exactInt64(s); got != want || ok != wantOK {
			t.Fatalf("exactInt64(%q) = %q, %v; big.Rat says %q, %v", s, got, ok, want, wantOK)
		}
	}
}

// TestHostileNumbersAreCheap: a callable body of numbers with huge
// exponents used to cost seconds of CPU (an exact big.Rat of each); now
// each number is read in time linear in its length, and the first that is
// not an integer stops the decoding.
func TestHostileNumbersAreCheap(t *testing.T) {
	data := `{"x":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 7000), ",") + `]}`
	var dst struct {
		X []int64 `json:"x"`
	}
	start := time.Now()
	if err := unmarshal([]byte(data), &dst, callableIntegers); err == nil {
		t.Fatal("accepted 1e999999 as an integer")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("7,000 numbers with huge exponents took %s", took)
	}
}

// BenchmarkDecode compares a request's decoding as plain JSON and as a
// callable's data with the SDKs' integer wrappers (bench/README.md,
// "The edge"): 500 increments, each delta wrapped as the mobile SDKs write
// it, decoded in the same one pass.
func BenchmarkDecode(b *testing.B) {
	var plain, callable strings.Builder
	plain.WriteString(`{"increments":[`)
	callable.WriteString(`{"increments":[`)
	for i := range 500 {
		if i > 0 {
			plain.WriteString(",")
			callable.WriteString(",")
		}
		fmt.Fprintf(&plain, `{"counter_id":"views:post-%d","delta":%d,"idempotency_key":"k-%d"}`, i, i%5+1, i)
		fmt.Fprintf(&callable, `{"counter_id":"views:post-%d","delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"%d"},"idempotency_key":"k-%d"}`, i, i%5+1, i)
	}
	plain.WriteString(`]}`)
	callable.WriteString(`]}`)
	type item struct {
		CounterID      *string `json:"counter_id"`
		Delta          *int64  `json:"delta"`
		IdempotencyKey *string `json:"idempotency_key"`
	}
	var dst struct {
		Increments []item `json:"increments"`
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if err := Unmarshal([]byte(plain.String()), &dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("callable", func(b *testing.B) {
		for b.Loop() {
			if err := unmarshal([]byte(callable.String()), &dst, callableIntegers); err != nil {
				b.Fatal(err)
			}
		}
	})
}

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
func TestUnwrapIntegers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"counter_id":"p","delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3"}}`, `{"counter_id":"p","delta":3}`},
		{`{"num_shards":{"@type":"type.googleapis.com/google.protobuf.UInt64Value","value":"10"}}`, `{"num_shards":10}`},
		{`{"followers_count":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"-9223372036854775808"}}`, `{"followers_count":-9223372036854775808}`},
		{`{"increments":[{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"-1"}},{"delta":2.0}]}`, `{"increments":[{"delta":-1},{"delta":2}]}`},
		{`{"limit":3.0,"x":3e2,"y":1.5,"z":1e400}`, `{"limit":3,"x":300,"y":1.5,"z":1e400}`},
		// Not integers: left for the strict decoder to refuse, naming the field.
		{`{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3.5"}}`, `{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3.5"}}`},
		{`{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3","extra":1}}`, `{"delta":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"3","extra":1}}`},
		{`{"a":1,"a":2}`, `{"a":1,"a":2}`},
		{`{"a":`, `{"a":`},
	} {
		if got := string(unwrapIntegers([]byte(tc.in))); got != tc.want {
			t.Errorf("unwrapIntegers(%s)\n = %s\nwant %s", tc.in, got, tc.want)
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
// each number is read in time linear in its length.
func TestHostileNumbersAreCheap(t *testing.T) {
	data := `{"x":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 7000), ",") + `]}`
	start := time.Now()
	unwrapIntegers([]byte(data))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("7,000 numbers with huge exponents took %s", took)
	}
}

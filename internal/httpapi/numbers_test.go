package httpapi

import (
	"testing"
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

package rfc3339

import "testing"

func TestParse(t *testing.T) {
	for s, ok := range map[string]bool{
		"2019-01-01T13:45:23Z":        true,
		"2019-01-01T13:45:23.010Z":    true,
		"2019-01-01T13:45:23+23:59":   true,
		"2019-01-01T13:45:23-00:00":   true,
		"2019-01-01T13:45:23+24:00":   false,
		"2019-01-01T13:45:23+12:60":   false,
		"2019-01-01T13:45:23-99:00":   false,
		"2019-01-01 13:45:23Z":        false,
		"2019-01-01T13:45:23":         false,
		"2019-01-01T13:45:23.5+01:00": true,
		// Firestore's range, in UTC.
		"0001-01-01T00:00:00Z":      true,
		"9999-12-31T23:59:59Z":      true,
		"0000-12-31T23:00:00Z":      false,
		"0001-01-01T00:30:00+01:00": false,
		"9999-12-31T23:59:00-23:59": false,
	} {
		if _, err := Parse("from", s); (err == nil) != ok {
			t.Errorf("Parse(%q): %v, want ok=%v", s, err, ok)
		}
	}
}

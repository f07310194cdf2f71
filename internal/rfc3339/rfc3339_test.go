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
	} {
		if _, err := Parse("from", s); (err == nil) != ok {
			t.Errorf("Parse(%q): %v, want ok=%v", s, err, ok)
		}
	}
}

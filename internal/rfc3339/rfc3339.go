// Package rfc3339 parses the times clients send, strictly: Go's
// time.Parse takes offsets RFC 3339 forbids (+24:00, +12:60 read as
// +13:00), which would shift a client's time silently.
package rfc3339

import (
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// Parse reads an RFC 3339 time (fractional seconds allowed) sent in field;
// an invalid one is INVALID_ARGUMENT naming the field.
func Parse(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !validOffset(s) {
		return time.Time{}, errs.Invalid(field, "must be an RFC 3339 time such as \"2019-01-01T13:45:23.010Z\"")
	}
	// Firestore's timestamps: a time past them would be its error, a 500.
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, errs.Invalid(field, "must lie in the years 0001 to 9999 (UTC)")
	}
	return t, nil
}

// validOffset checks the numeric offset at the end of s, if any: hours
// 00–23, minutes 00–59.
func validOffset(s string) bool {
	if len(s) < 6 || s[len(s)-1] == 'Z' || s[len(s)-1] == 'z' {
		return true
	}
	off := s[len(s)-6:]
	if off[0] != '+' && off[0] != '-' || off[3] != ':' {
		return false
	}
	h, m := (off[1]-'0')*10+(off[2]-'0'), (off[4]-'0')*10+(off[5]-'0')
	return h <= 23 && m <= 59
}

package erasure

import (
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	"github.com/shardcount/shardcount/internal/errs"
)

// TestOpen: a page token opens against its erasure's record, also once a
// begin that landed second, by the same key, moved the record's start
// later; never against a record that began before the token, another
// key, or past the record's life.
func TestOpen(t *testing.T) {
	began := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c := Cursor{Began: began, Key: []byte("k1"), Since: true,
		After: counter.Membership{Path: "counters/c1/members/u1", JoinedAt: began.Add(-time.Hour)}}
	tok := c.Token()
	now := func() time.Time { return began.Add(time.Minute) }
	for _, tc := range []struct {
		name string
		r    Record
		ok   bool
	}{
		{"its own record", Record{Began: began, Expires: began.Add(time.Hour), Key: []byte("k1")}, true},
		{"its record, begun again later by the same key", Record{Began: began.Add(time.Second), Expires: began.Add(time.Hour), Key: []byte("k1")}, true},
		{"a record that began before it", Record{Began: began.Add(-time.Second), Expires: began.Add(time.Hour), Key: []byte("k1")}, false},
		{"another erasure's key", Record{Began: began, Expires: began.Add(time.Hour), Key: []byte("k2")}, false},
		{"past its life", Record{Began: began, Expires: began.Add(time.Minute), Key: []byte("k1")}, false},
	} {
		got, err := Open(tok, "u1", now, func() (Record, error) { return tc.r, nil })
		switch {
		case tc.ok && (err != nil || !got.Began.Equal(began) || !got.Since || got.After != c.After):
			t.Errorf("%s: %+v, %v; want the token's own cursor", tc.name, got, err)
		case !tc.ok && !errs.Is(err, errs.InvalidArgument):
			t.Errorf("%s: %v, want a 400", tc.name, err)
		}
	}
	if _, err := Open(tok, "u2", now, func() (Record, error) {
		return Record{Began: began, Expires: began.Add(time.Hour), Key: []byte("k1")}, nil
	}); !errs.Is(err, errs.InvalidArgument) {
		t.Errorf("another user's token: %v, want a 400", err)
	}
}

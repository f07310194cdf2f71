package shardedts

import (
	"encoding/base64"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestTokenRoundTrip(t *testing.T) {
	c := &tokenCodec{key: []byte("k")}
	f := Filter{Field: "exchange", Value: "EXCHG1"}
	cur := cursor{at: time.Date(2019, 1, 1, 13, 45, 23, 10_000, time.UTC), id: "AbC123"}
	got, err := c.decode(c.encode(cur, f), f)
	if err != nil || !got.at.Equal(cur.at) || got.id != cur.id {
		t.Fatalf("decode(encode(%v)) = %v, %v", cur, got, err)
	}
}

func TestTokenRejectsAnyChange(t *testing.T) {
	c := &tokenCodec{key: []byte("k")}
	f := Filter{Field: "exchange", Value: "EXCHG1"}
	tok := c.encode(cursor{at: time.Unix(1546350323, 10), id: "doc"}, f)
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			b := slices.Clone(raw)
			b[i] ^= bit
			if _, err := c.decode(base64.RawURLEncoding.EncodeToString(b), f); !errors.Is(err, ErrBadToken) {
				t.Errorf("byte %d ^ %#x accepted", i, bit)
			}
		}
	}
	for name, tc := range map[string]struct {
		codec *tokenCodec
		f     Filter
		tok   string
	}{
		"other value":  {c, Filter{Field: "exchange", Value: "EXCHG2"}, tok},
		"other field":  {c, Filter{Field: "instrumentType", Value: "EXCHG1"}, tok},
		"other key":    {&tokenCodec{key: []byte("other")}, f, tok},
		"empty":        {c, f, ""},
		"not base64":   {c, f, "!!!"},
		"short":        {c, f, tok[:10]},
		"extra byte":   {c, f, tok + "A"},
		"padded input": {c, f, tok + "=="},
	} {
		if _, err := tc.codec.decode(tc.tok, tc.f); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: err = %v, want ErrBadToken", name, err)
		}
	}
}

func TestChunks(t *testing.T) {
	for _, tc := range []struct{ shards, chunks, last int }{{1, 1, 1}, {3, 1, 3}, {30, 1, 30}, {31, 2, 1}, {64, 3, 4}, {1000, 34, 10}} {
		c := &Collection{shards: shardValues(tc.shards)}
		chunks := c.Chunks()
		if len(chunks) != tc.chunks || len(chunks[len(chunks)-1]) != tc.last {
			t.Errorf("%d shards: %d chunks, last of %d; want %d, %d", tc.shards, len(chunks), len(chunks[len(chunks)-1]), tc.chunks, tc.last)
		}
		if got := slices.Concat(chunks...); !slices.Equal(got, c.Shards()) {
			t.Errorf("%d shards: chunks do not cover the shard values in order", tc.shards)
		}
	}
}

// FuzzTokenDecode feeds arbitrary page tokens to the decoder: it must never
// panic, and must reject anything it did not issue for the same filter.
func FuzzTokenDecode(f *testing.F) {
	c := &tokenCodec{key: []byte("k")}
	valid := c.encode(cursor{at: time.Unix(1546350323, 10), id: "doc"}, Filter{Field: "exchange", Value: "E"})
	f.Add(valid, "exchange", "E")
	f.Add(valid, "exchange", "F")
	f.Add("AQID", "exchange", "E")
	f.Fuzz(func(t *testing.T, token, field, value string) {
		cur, err := c.decode(token, Filter{Field: field, Value: value})
		if err != nil {
			if !errors.Is(err, ErrBadToken) {
				t.Fatalf("error %v is not ErrBadToken", err)
			}
			return
		}
		// Accepted: it must be exactly a token this codec issues.
		if again := c.encode(cur, Filter{Field: field, Value: value}); again != token {
			t.Fatalf("accepted %q, which re-encodes as %q", token, again)
		}
	})
}

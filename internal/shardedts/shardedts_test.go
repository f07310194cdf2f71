package shardedts

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
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
		c := offlineCollection(t, tc.shards)
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

// offlineCollection is an instruments-like collection of a client that never
// connects: Plan only builds queries.
func offlineCollection(t testing.TB, shards int) *Collection {
	c, err := firestore.NewClient(context.Background(), "p", option.WithoutAuthentication(), option.WithEndpoint("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return New(c.Collection("instruments"), shards, []byte("k"))
}

// signed builds a token with any payload and a valid MAC: what a holder of
// the key (or a bug of ours) could issue.
func signed(c *tokenCodec, f Filter, secs int64, nanos uint64, id []byte, idLen uint64) string {
	b := []byte{tokenVersion}
	b = binary.AppendVarint(b, secs)
	b = binary.AppendUvarint(b, nanos)
	b = binary.AppendUvarint(b, idLen)
	b = append(b, id...)
	b = append(b, c.mac(b, f)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestSignedButInvalidCursorsAreRejected(t *testing.T) {
	c := &tokenCodec{key: []byte("k")}
	f := Filter{Field: "exchange", Value: "E"}
	ok := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for name, tok := range map[string]string{
		"invalid UTF-8 id": signed(c, f, ok, 0, []byte("a\xffb"), 3),
		"slash in id":      signed(c, f, ok, 0, []byte("a/b"), 3),
		"empty id":         signed(c, f, ok, 0, nil, 0),
		"__name__ id":      signed(c, f, ok, 0, []byte("__name__"), 8),
		"dot dot id":       signed(c, f, ok, 0, []byte(".."), 2),
		"id too long":      signed(c, f, ok, 0, []byte(strings.Repeat("a", 1501)), 1501),
		"year 0":           signed(c, f, time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC).Unix(), 0, []byte("a"), 1),
		"year 10000":       signed(c, f, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), 0, []byte("a"), 1),
		"nanos >= 1e9":     signed(c, f, ok, 1e9, []byte("a"), 1),
		"wrong id length":  signed(c, f, ok, 0, []byte("ab"), 1),
	} {
		if _, err := c.decode(tok, f); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: err = %v, want ErrBadToken", name, err)
		}
	}
	if _, err := c.decode(signed(c, f, ok, 5, []byte("AbC"), 3), f); err != nil {
		t.Errorf("a valid signed cursor: %v", err)
	}
}

// FuzzTokenPayload fuzzes the cursor inside a token with a valid MAC:
// whatever the decoder accepts must be a position Firestore takes, so a
// page request can never fail (500) or hang on it.
func FuzzTokenPayload(f *testing.F) {
	f.Add(int64(1546350323), uint64(10), []byte("doc"), uint64(3))
	f.Add(int64(-62135596800), uint64(0), []byte("a"), uint64(1))
	f.Add(int64(253402300799), uint64(999999999), []byte("\xff"), uint64(1))
	coll := offlineCollection(f, 64)
	filter := Filter{Field: "exchange", Value: "E"}
	f.Fuzz(func(t *testing.T, secs int64, nanos uint64, id []byte, idLen uint64) {
		tok := signed(coll.tokens, filter, secs, nanos, id, idLen)
		queries, err := coll.Plan(filter, 20, tok)
		if err != nil {
			if !errors.Is(err, ErrBadToken) {
				t.Fatalf("error %v is not ErrBadToken", err)
			}
			return
		}
		cur, _ := coll.tokens.decode(tok, filter)
		if !cur.valid() || !utf8ValidAndNoSlash(cur.id) {
			t.Fatalf("accepted cursor %+v", cur)
		}
		for _, q := range queries {
			if _, err := q.Serialize(); err != nil {
				t.Fatalf("accepted cursor %+v makes a query the client rejects: %v", cur, err)
			}
		}
	})
}

func utf8ValidAndNoSlash(s string) bool {
	return strings.ToValidUTF8(s, "") == s && !strings.Contains(s, "/")
}

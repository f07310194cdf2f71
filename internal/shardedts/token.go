package shardedts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrBadToken is returned for a page token that was not issued by this
// collection for the same filter, or was altered.
var ErrBadToken = errors.New("shardedts: invalid page token")

// cursor is the position after the last document of a page.
type cursor struct {
	at time.Time
	id string
}

// tokenCodec turns cursors into opaque tokens:
//
//	base64url( version | seconds | nanos | len(id) | id | MAC )
//
// where MAC is HMAC-SHA256 over the rest and the query's filter, cut to 16
// bytes. A token is only valid for the filter it was issued for.
type tokenCodec struct{ key []byte }

const (
	tokenVersion = 1
	macLen       = 16
)

func (c *tokenCodec) encode(cur cursor, f Filter) string {
	b := []byte{tokenVersion}
	b = binary.AppendVarint(b, cur.at.Unix())
	b = binary.AppendUvarint(b, uint64(cur.at.Nanosecond()))
	b = binary.AppendUvarint(b, uint64(len(cur.id)))
	b = append(b, cur.id...)
	b = append(b, c.mac(b, f)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (c *tokenCodec) decode(token string, f Filter) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 1+macLen || b[0] != tokenVersion {
		return cursor{}, ErrBadToken
	}
	body, mac := b[:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(mac, c.mac(body, f)) {
		return cursor{}, ErrBadToken
	}
	rest := body[1:]
	secs, n := binary.Varint(rest)
	if n <= 0 {
		return cursor{}, ErrBadToken
	}
	rest = rest[n:]
	nanos, n := binary.Uvarint(rest)
	if n <= 0 || nanos >= 1e9 {
		return cursor{}, ErrBadToken
	}
	rest = rest[n:]
	idLen, n := binary.Uvarint(rest)
	if n <= 0 || idLen != uint64(len(rest)-n) {
		return cursor{}, ErrBadToken
	}
	cur := cursor{at: time.Unix(secs, int64(nanos)).UTC(), id: string(rest[n:])}
	if !cur.valid() {
		// Signed by us but not a position we issue: a leaked key, or a
		// change of this code. Firestore would fail or hang on it.
		return cursor{}, ErrBadToken
	}
	return cur, nil
}

// Firestore's timestamp range and document id rules.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
)

const maxIDBytes = 1500

// valid reports whether Firestore accepts the cursor: a time in its range
// and a valid document id (1–1,500 bytes of UTF-8, no "/", not "." or
// "..", not of the reserved form __…__).
func (c cursor) valid() bool {
	id := c.id
	switch {
	case c.at.Before(minTime) || c.at.After(maxTime):
		return false
	case id == "" || len(id) > maxIDBytes || !utf8.ValidString(id) || strings.Contains(id, "/"):
		return false
	case id == "." || id == "..":
		return false
	case len(id) >= 4 && strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__"):
		return false
	}
	return true
}

func (c *tokenCodec) mac(body []byte, f Filter) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	fmt.Fprintf(m, "\x00%s\x00%v", f.Field, f.Value)
	return m.Sum(nil)[:macLen]
}

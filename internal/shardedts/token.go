package shardedts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
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
	return cursor{at: time.Unix(secs, int64(nanos)).UTC(), id: string(rest[n:])}, nil
}

func (c *tokenCodec) mac(body []byte, f Filter) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	fmt.Fprintf(m, "\x00%s\x00%v", f.Field, f.Value)
	return m.Sum(nil)[:macLen]
}

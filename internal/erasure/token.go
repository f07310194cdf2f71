package erasure

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/shardcount/shardcount/internal/counter"
	dm "github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/errs"
)

// An eraseMember page token says where an erasure stands, signed with a
// key of that erasure's own, kept in its record (HMAC-SHA256): an edited
// or forged token, or one of an erasure since begun again or past its
// record's life, is refused, never taken as an erasure complete with
// nothing erased. A deployment needs no secret of its own for it.

// Cursor is where an erasure stands: when it began, the last membership
// gone over, whether it is going over those since it began, and its key.
type Cursor struct {
	Began time.Time
	After counter.Membership
	Since bool
	Key   []byte
}

// Begin is the cursor of an erasure that begins at now, with a new key.
// Firestore keeps microseconds: the token's time is the record's.
func Begin(now time.Time) Cursor {
	c := Cursor{Began: now.Truncate(time.Microsecond), Key: make([]byte, sha256.Size)}
	rand.Read(c.Key)
	return c
}

// Record is an erasure's record: when it began, until when it holds, and
// its key.
type Record struct {
	Began, Expires time.Time
	Key            []byte
}

// token is a page token's content.
type token struct {
	Began time.Time `json:"b"`
	Since bool      `json:"s,omitempty"`
	At    time.Time `json:"a,omitzero"`
	Path  string    `json:"p,omitempty"`
	MAC   []byte    `json:"m,omitempty"`
}

// maxToken bounds a page token: a membership's path is at most a counter
// id and a uid (and an app's own members document, as deep).
const maxToken = 4096

// Token is c as a page token.
func (c Cursor) Token() string {
	t := token{Began: c.Began, Since: c.Since, At: c.After.JoinedAt, Path: c.After.Path}
	t.MAC = c.mac(t)
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// mac is the signature of t's content with c's key.
func (c Cursor) mac(t token) []byte {
	t.MAC = nil
	b, _ := json.Marshal(t)
	m := hmac.New(sha256.New, c.Key)
	m.Write(b)
	return m.Sum(nil)
}

// Open reads a page token of eraseMember for uid ("": a new erasure, the
// zero Cursor) and checks it against uid's latest erasure record, which
// record reads: its time, its life (at now, once it is read) and its key.
func Open(tok, uid string, now func() time.Time, record func() (Record, error)) (Cursor, error) {
	if tok == "" {
		return Cursor{}, nil
	}
	bad := errs.Invalid("page_token", "is not a page token of this user's latest erasure, or is past its life (an hour): call eraseMember without page_token to begin again")
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var t token
	if len(tok) > maxToken || err != nil || json.Unmarshal(raw, &t) != nil || t.Began.IsZero() ||
		t.Path != "" && !dm.IsMembership(t.Path, uid) {
		return Cursor{}, bad
	}
	r, err := record()
	if err != nil {
		return Cursor{}, err
	}
	c := Cursor{Began: t.Began, Since: t.Since, Key: r.Key}
	if t.Path != "" {
		c.After = counter.Membership{Path: t.Path, JoinedAt: t.At}
	}
	// The record may have begun later than the token, by the same key: a
	// begin that landed second, and began later, moved its start
	// (memberstore.RecordErasure). This erasure goes on from its own.
	if r.Began.Before(t.Began) || !now().Before(r.Expires) || !hmac.Equal(t.MAC, c.mac(t)) {
		return Cursor{}, bad
	}
	return c, nil
}

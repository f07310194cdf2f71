package core

import (
	"context"
	"crypto/hmac"
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

// erasure is where an erasure stands: when it began, the last membership
// gone over, whether it is going over those since it began, and its key.
type erasure struct {
	began time.Time
	after counter.Membership
	since bool
	key   []byte
}

// erasureToken is a page token's content.
type erasureToken struct {
	Began time.Time `json:"b"`
	Since bool      `json:"s,omitempty"`
	At    time.Time `json:"a,omitzero"`
	Path  string    `json:"p,omitempty"`
	MAC   []byte    `json:"m,omitempty"`
}

// maxErasureToken bounds a page token: a membership's path is at most a
// counter id and a uid (and an app's own members document, as deep).
const maxErasureToken = 4096

func (e erasure) token() string {
	t := erasureToken{Began: e.began, Since: e.since, At: e.after.JoinedAt, Path: e.after.Path}
	t.MAC = e.mac(t)
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// mac is the signature of t's content with e's key.
func (e erasure) mac(t erasureToken) []byte {
	t.MAC = nil
	b, _ := json.Marshal(t)
	m := hmac.New(sha256.New, e.key)
	m.Write(b)
	return m.Sum(nil)
}

// erasureCursor reads a page token of eraseMember for uid ("": a new
// erasure) and checks it against uid's latest erasure record: its time,
// its life and its key (a read).
func (core *Core) erasureCursor(ctx context.Context, token, uid string) (erasure, error) {
	if token == "" {
		return erasure{}, nil
	}
	bad := errs.Invalid("page_token", "is not a page token of this user's latest erasure, or is past its life (an hour): call eraseMember without page_token to begin again")
	raw, err := base64.RawURLEncoding.DecodeString(token)
	var t erasureToken
	if len(token) > maxErasureToken || err != nil || json.Unmarshal(raw, &t) != nil || t.Began.IsZero() ||
		t.Path != "" && !dm.IsMembership(t.Path, uid) {
		return erasure{}, bad
	}
	began, expires, key, err := core.members.Erasure(ctx, uid)
	if err != nil {
		return erasure{}, err
	}
	e := erasure{began: t.Began, since: t.Since, key: key}
	if t.Path != "" {
		e.after = counter.Membership{Path: t.Path, JoinedAt: t.At}
	}
	if !began.Equal(t.Began) || !core.now().Before(expires) || !hmac.Equal(t.MAC, e.mac(t)) {
		return erasure{}, bad
	}
	return e, nil
}

package core

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	dm "github.com/shardcount/shardcount/internal/datamodel"
	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/wire"
)

// TestAnErasuresPageTokenIsItsOwn: a page token goes on with the erasure
// that made it, and nothing else does: an edited one (a time to come, a
// zero time, a pass flipped to the last, a path up and out), a forged
// one, another user's, garbage, or one past its record's life is a 400.
// Before signed tokens, a began of 9999 answered complete with nothing
// erased.
func TestAnErasuresPageTokenIsItsOwn(t *testing.T) {
	m := newMemCore(t, map[string]string{"ERASURE_CHECK": "30s", "FIRESTORE_DEADLINE": "10s"})
	ctx := context.Background()
	for _, post := range []string{"p1", "p2"} {
		if _, _, err := m.IncrementCounter(ctx, Caller{Function: "incrementCounter", User: "ida", Addr: "10.3.0.2"},
			wire.IncrementCounterRequest{IncrementItem: wire.IncrementItem{CounterID: ptr("likes:" + post)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("ida")})
	if err != nil || resp.Complete || resp.NextPageToken == "" {
		t.Fatalf("the first call: %+v, %v", resp, err)
	}
	token := resp.NextPageToken
	// An attacker's edit, field by field of the token's JSON.
	edit := func(change func(t map[string]any)) string {
		raw, _ := base64.RawURLEncoding.DecodeString(token)
		var et map[string]any
		if err := json.Unmarshal(raw, &et); err != nil {
			t.Fatal(err)
		}
		change(et)
		b, _ := json.Marshal(et)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	for name, bad := range map[string]string{
		"a time to come":        edit(func(t map[string]any) { t["b"] = "9999-12-31T23:59:59Z" }),
		"a zero time":           edit(func(t map[string]any) { t["b"] = "0001-01-01T00:00:00Z" }),
		"the last pass at once": edit(func(t map[string]any) { t["s"] = t["s"] != true }),
		"a path up and out":     edit(func(t map[string]any) { t["p"] = "counters/../members/ida" }),
		"a later membership":    edit(func(t map[string]any) { t["p"], t["a"] = "counters/likes:p9/members/ida", nil }),
		"no signature":          edit(func(t map[string]any) { delete(t, "m") }),
		"garbage":               strings.Repeat("x", 100),
		"far too long":          strings.Repeat("A", 10_000),
	} {
		if _, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("ida"), PageToken: &bad}); codeOf(err) != "INVALID_ARGUMENT" {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if _, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("jo"), PageToken: &token}); codeOf(err) != "INVALID_ARGUMENT" {
		t.Errorf("another user's token: %v", err)
	}
	m.advance(m.lastPassAfter())
	if resp, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("ida"), PageToken: &token}); err != nil || !resp.Complete {
		t.Errorf("the erasure's own token: %+v, %v; want complete", resp, err)
	}
	m.advance(2 * time.Hour)
	if _, err := m.EraseMember(ctx, admin, wire.EraseMemberRequest{UID: ptr("ida"), PageToken: &token}); codeOf(err) != "INVALID_ARGUMENT" {
		t.Errorf("a token past its record's life: %v", err)
	}
}

// TestAnErasureSkipsAMemberOfAKindThatKeepsNoneNow: a member document left
// under a counter of a kind made distinct since (its counter document
// deleted by hand: the kind's new counter is distinct) is skipped, and
// the erasure completes. Its −1 was refused (delta must be 1), the call a
// 400, and every retry of its page token the same: the erasure never
// ended.
func TestAnErasureSkipsAMemberOfAKindThatKeepsNoneNow(t *testing.T) {
	m := newMemCore(t, map[string]string{"ERASURE_CHECK": "30s", "FIRESTORE_DEADLINE": "10s"})
	ctx := context.Background()
	m.leaveMember(t, "watchers:p1", "ida")
	if first := m.eraseThrough(t, "ida"); first.Skipped != 1 {
		t.Errorf("the first call: %+v; want the member skipped", first)
	}
	if c, err := m.counters.Live(ctx, "watchers:p1"); err == nil {
		t.Errorf("the erasure created the counter: %+v", c)
	}
}

// TestAnErasureDeletesAnOrphanOfACounterOfNoKind: a member document left
// under a counter made by createCounter, whose document was deleted by
// hand, is deleted, and nothing is counted or created. Before, its −1 was
// NOT_FOUND, skipped as if a purge would delete it: none does, and the
// erasure answered complete with the user a member still.
func TestAnErasureDeletesAnOrphanOfACounterOfNoKind(t *testing.T) {
	m := newMemCore(t, map[string]string{"ERASURE_CHECK": "30s", "FIRESTORE_DEADLINE": "10s"})
	ctx := context.Background()
	m.leaveMember(t, "mine", "ida")
	if first := m.eraseThrough(t, "ida"); first.Counters != 0 {
		t.Errorf("the first call: %+v; want nothing counted", first)
	}
	if d, err := m.db.Get(ctx, m.db.Name(dm.Member("mine", "ida"))); err != nil || d != nil {
		t.Errorf("the orphan member document: %v, %v; want deleted", d, err)
	}
	if d, err := m.db.Get(ctx, m.db.Name(dm.Counter("mine"))); err != nil || d != nil {
		t.Errorf("the counter document: %v, %v; want none", d, err)
	}
}

// leaveMember writes uid's member document of counter id, joined an hour
// ago, under no counter document: as a counter deleted by hand leaves it.
func (m *memCore) leaveMember(t *testing.T, id, uid string) {
	t.Helper()
	if _, err := m.db.Commit(context.Background(), fs.SetWrite(m.db.Name(dm.Member(id, uid)), map[string]*pb.Value{
		dm.FieldUID: fs.StringValue(uid), dm.FieldCounterID: fs.StringValue(id), dm.FieldJoinedAt: fs.TimeValue(m.now.Add(-time.Hour))})); err != nil {
		t.Fatal(err)
	}
}

// eraseThrough erases uid: its first call, then, once due, its last
// pass, which must complete. It returns the first call's answer.
func (m *memCore) eraseThrough(t *testing.T, uid string) wire.EraseMemberResponse {
	t.Helper()
	first, err := m.EraseMember(context.Background(), admin, wire.EraseMemberRequest{UID: ptr(uid)})
	if err != nil {
		t.Fatalf("the first call: %v", err)
	}
	m.advance(m.lastPassAfter())
	token := first.NextPageToken
	if last, err := m.EraseMember(context.Background(), admin, wire.EraseMemberRequest{UID: ptr(uid), PageToken: &token}); err != nil || !last.Complete {
		t.Errorf("the last pass: %+v, %v; want complete", last, err)
	}
	return first
}

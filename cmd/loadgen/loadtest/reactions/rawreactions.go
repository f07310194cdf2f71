package reactions

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// RawReactions is what an app does without shardcount: a transaction per
// tap that reads the user's member document, creates, updates or deletes
// it, and moves the counts of a random shard with it (the old choice −1,
// the new +1, and count, the people with a reaction, ±1).
type RawReactions struct {
	Raw   *loadtest.Raw
	Count int // users
}

func (r *RawReactions) Create(ctx context.Context, id string, spec ReactionSpec) error {
	return r.Raw.CreateCounter(ctx, id, spec.Shards)
}

func (r *RawReactions) Users() int { return r.Count }

func (r *RawReactions) React(ctx context.Context, id string, u int, choice, _ string) (string, loadtest.Outcome) {
	c := r.Raw.Client
	ref := c.Doc("counters/" + id + "/members/user-" + strconv.Itoa(u))
	shard := c.Doc("counters/" + id + "/shards/" + strconv.Itoa(rand.IntN(r.Raw.Shards(id))))
	err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		old, err := heldChoice(tx, ref)
		if err != nil || old == choice {
			return err
		}
		if err := writeMember(tx, ref, old, choice); err != nil {
			return err
		}
		return tx.Set(shard, shardMove(old, choice), firestore.MergeAll)
	})
	if err != nil {
		return "", loadtest.Outcome{Status: http.StatusServiceUnavailable}
	}
	return choice, loadtest.Outcome{Status: http.StatusOK, OK: true}
}

// heldChoice reads the member document in tx: its choice, "" if absent.
func heldChoice(tx *firestore.Transaction, ref *firestore.DocumentRef) (string, error) {
	snap, err := tx.Get(ref)
	if status.Code(err) == codes.NotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	choice, _ := snap.Data()["choice"].(string)
	return choice, nil
}

// writeMember creates, updates or deletes the member document in tx, as
// the choice goes from old to now (they differ).
func writeMember(tx *firestore.Transaction, ref *firestore.DocumentRef, old, now string) error {
	switch {
	case old == "":
		return tx.Create(ref, map[string]any{"choice": now, "joined_at": firestore.ServerTimestamp})
	case now == "":
		return tx.Delete(ref)
	}
	return tx.Update(ref, []firestore.Update{{Path: "choice", Value: now}})
}

// shardMove is the shard's change as a choice goes from old to now (they
// differ): −1 to old's count, +1 to now's, and count ±1 when a person
// comes or goes.
func shardMove(old, now string) map[string]any {
	counts := map[string]any{}
	var count int64
	if old != "" {
		counts[old] = firestore.Increment(-1)
		count--
	}
	if now != "" {
		counts[now] = firestore.Increment(1)
		count++
	}
	return map[string]any{"count": firestore.Increment(count), "counts": counts}
}

// Tally adds up the shards: count, and each choice's count.
func (r *RawReactions) Tally(ctx context.Context, id string) (Tally, error) {
	return sumDocs(ctx, r.Raw.Client.Collection("counters/"+id+"/shards").Documents(ctx), func(t *Tally, d map[string]any) {
		n, _ := d["count"].(int64)
		t.Count += n
		counts, _ := d["counts"].(map[string]any)
		for choice, v := range counts {
			n, _ := v.(int64)
			t.Counts[choice] += n
		}
	})
}

func (r *RawReactions) Members(ctx context.Context, id string) (Tally, error) {
	return memberTally(ctx, r.Raw.Client, id)
}

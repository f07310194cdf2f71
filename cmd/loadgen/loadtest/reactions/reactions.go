package reactions

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
)

// Reactor is what the reactions scenario needs of the system under test:
// a choice counter, and users who set, switch and remove their reaction.
type Reactor interface {
	// Create makes the counter ready for reactions.
	Create(ctx context.Context, id string, spec ReactionSpec) error
	// React sets user u's reaction ("" removes it) and says their reaction
	// after; its key makes a retry of the same tap count once.
	React(ctx context.Context, id string, u int, choice, key string) (string, loadtest.Outcome)
	Users() int
	// Tally is the counter's count and counts of each choice now.
	Tally(ctx context.Context, id string) (Tally, error)
	// Members tallies the member documents' choices, at the end.
	Members(ctx context.Context, id string) (Tally, error)
}

// ReactionSpec is the choice kind the scenario reacts on.
type ReactionSpec struct {
	Kind    string   // the counter id is "KIND:…"
	Choices []string // the kind's choices
	Shards  int      // the kind's num_shards (what the raw counter gets)
}

// Tally is a choice counter's count (people with a reaction) and the
// count of each choice.
type Tally struct {
	Count  int64            `json:"count"`
	Counts map[string]int64 `json:"counts"`
}

// Equal reports whether two tallies hold the same numbers; an absent
// choice counts 0.
func (t Tally) Equal(o Tally) bool {
	if t.Count != o.Count {
		return false
	}
	for _, m := range []map[string]int64{t.Counts, o.Counts} {
		for c := range m {
			if t.Counts[c] != o.Counts[c] {
				return false
			}
		}
	}
	return true
}

// add counts one person's choice ("": none) into t.
func (t *Tally) add(choice string) {
	if choice == "" {
		return
	}
	if t.Counts == nil {
		t.Counts = map[string]int64{}
	}
	t.Count++
	t.Counts[choice]++
}

// ReactionsReport is the outcome of the reactions scenario.
type ReactionsReport struct {
	loadtest.Report
	Users   int      `json:"users"`
	Choices []string `json:"choices"`
	// Expected tallies each user's last acknowledged reaction; the strong
	// read (Read) and the member documents must both equal it.
	Expected   Tally `json:"expected"`
	Read       Tally `json:"read"`
	MemberDocs Tally `json:"member_docs"`
}

// Reactions has U users switch their reaction on one choice counter at
// random (one tap in five removes it), the taps doubled and retried as in
// loadtest.Likes. Each worker plays its own users in turn, so every user's last
// reaction is known; at the end the counter's count and counts, and the
// member documents, must equal those reactions.
func Reactions(ctx context.Context, r Reactor, mode string, o loadtest.Options, spec ReactionSpec) (ReactionsReport, error) {
	id := fmt.Sprintf("%s:load-%s-%d", spec.Kind, loadtest.IDSafe(mode), time.Now().UnixNano())
	if err := r.Create(ctx, id, spec); err != nil {
		return ReactionsReport{}, fmt.Errorf("create counter: %w", err)
	}
	users := r.Users()
	o.Concurrency = min(o.Concurrency, users) // a user's taps are one worker's, in turn
	held := make([]string, users)             // each user's reaction, written by their worker only
	turns := loadtest.NewStrider(users, o.Concurrency)
	var taps atomic.Int64
	before, counted := loadtest.Snapshot(ctx, r)
	stats := loadtest.Run(ctx, o, func(ctx context.Context, worker int) loadtest.Outcome {
		u, choice := turns.User(worker), randomReaction(spec.Choices)
		return loadtest.Tap(ctx, fmt.Sprintf("%s-%d-%d", id, u, taps.Add(1)), func(key string) loadtest.Outcome {
			now, out := r.React(ctx, id, u, choice, key)
			if out.OK {
				held[u] = now
			}
			return out
		})
	})
	rep := ReactionsReport{Users: users, Choices: spec.Choices, Report: loadtest.Report{Scenario: "reactions", Mode: mode, Concurrency: o.Concurrency, Shards: spec.Shards, Counters: 1, Stats: stats}}
	for _, c := range held {
		rep.Expected.add(c)
	}
	var err error
	if rep.Read, err = r.Tally(ctx, id); err != nil {
		return rep, err
	}
	if rep.MemberDocs, err = r.Members(ctx, id); err != nil {
		return rep, err
	}
	exact := rep.Read.Equal(rep.Expected) && rep.MemberDocs.Equal(rep.Expected)
	rep.Check = &loadtest.Check{Acknowledged: rep.Expected.Count, Strong: rep.Read.Count, Exact: exact}
	if after, ok := loadtest.Snapshot(ctx, r); ok && counted {
		rep.Cost = loadtest.CostOf(before, after, stats.OK)
	}
	return rep, nil
}

// randomReaction is one of choices, or "" (a removal) one time in five.
func randomReaction(choices []string) string {
	if rand.IntN(5) == 0 {
		return ""
	}
	return choices[rand.IntN(len(choices))]
}

// FunctionsReactions reacts through incrementCounter, as the users of
// F's tokens, and reads the member documents in the functions' project.
type FunctionsReactions struct {
	*loadtest.Functions
	DB *firestore.Client // the functions' project, for the member documents
}

// Create does nothing: a counter of a kind is created by its first use,
// in the commit that counts it.
func (f *FunctionsReactions) Create(context.Context, string, ReactionSpec) error { return nil }

// React sets or removes the reaction of the holder of token u.
func (f *FunctionsReactions) React(ctx context.Context, id string, u int, choice, key string) (string, loadtest.Outcome) {
	var resp struct {
		Choice string `json:"choice"`
	}
	status, err := f.DoAs(ctx, f.Bases[rand.IntN(len(f.Bases))], f.Tokens[u%len(f.Tokens)], "POST", "incrementCounter", "",
		map[string]any{"counter_id": id, "choice": choice, "idempotency_key": key}, &resp)
	return resp.Choice, loadtest.Outcome{Status: status, OK: err == nil}
}

// Tally is the strong read: a SUM of each choice over the shards.
func (f *FunctionsReactions) Tally(ctx context.Context, id string) (Tally, error) {
	var t Tally
	_, err := f.Do(ctx, "GET", "getCounter", "?consistency=strong&counter_id="+id, nil, &t)
	return t, err
}

func (f *FunctionsReactions) Members(ctx context.Context, id string) (Tally, error) {
	return memberTally(ctx, f.DB, id)
}

// memberTally reads every member document of counter id and tallies
// their choices.
func memberTally(ctx context.Context, db *firestore.Client, id string) (Tally, error) {
	return sumDocs(ctx, db.Collection("counters/"+id+"/members").Documents(ctx), func(t *Tally, d map[string]any) {
		choice, _ := d["choice"].(string)
		t.add(choice)
	})
}

// sumDocs adds every document of it into a tally with add.
func sumDocs(ctx context.Context, it *firestore.DocumentIterator, add func(*Tally, map[string]any)) (Tally, error) {
	defer it.Stop()
	t := Tally{Counts: map[string]int64{}}
	for {
		doc, err := it.Next()
		if err == iterator.Done {
			return t, nil
		}
		if err != nil {
			return t, err
		}
		add(&t, doc.Data())
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/reactions"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/report"
)

// benchReactions is the choice kind the reactions run on, as
// scripts/bench.sh declares it in COUNTER_KINDS.
var benchReactions = reactions.ReactionSpec{Kind: "reactions", Choices: []string{"like", "love", "haha", "wow", "sad", "angry"}, Shards: 10}

// reactors are the two ways of switching reactions the suite compares:
// through the functions as the users of tokens, and raw transactions.
func reactors(ctx context.Context, f flags, raw *loadtest.Raw, tokens []string) (map[string]reactions.Reactor, error) {
	same, err := rawClient(ctx, f.project) // the functions' project: their member documents
	if err != nil {
		return nil, err
	}
	return map[string]reactions.Reactor{
		"functions": &reactions.FunctionsReactions{Functions: loadtest.NewFunctions([]string{f.url}, tokens, 64), DB: same.Client},
		"raw":       &reactions.RawReactions{Raw: raw, Count: len(tokens)},
	}, nil
}

// reactionsSuite switches reactions through the functions and by raw
// transactions, the modes alternating for s.Rounds rounds, and keeps the
// median run of each in s.
func reactionsSuite(ctx context.Context, f flags, opts loadtest.Options, s *report.Suite, raw *loadtest.Raw, tokens []string) error {
	rs, err := reactors(ctx, f, raw, tokens)
	if err != nil {
		return err
	}
	o := opts
	o.Concurrency = 64
	s.Reactions, err = alternate(s.Rounds, func(mode string, round int) (reactions.ReactionsReport, error) {
		fmt.Fprintf(os.Stderr, "== reactions: %d users, %d shards, concurrency 64, %s, round %d/%d, %s\n",
			len(tokens), benchReactions.Shards, mode, round+1, s.Rounds, opts.Duration)
		r, err := reactions.Reactions(ctx, rs[mode], mode, o, benchReactions)
		printReactions(os.Stderr, r)
		return r, err
	}, func(r reactions.ReactionsReport) loadtest.Report { return r.Report })
	return err
}

// reactionsOnly is `-only reactions suite`: the reactions part alone,
// its table printed; the results files are left as they are.
func reactionsOnly(ctx context.Context, f flags, opts loadtest.Options) error {
	host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")
	if host == "" {
		return errors.New("reactions: FIREBASE_AUTH_EMULATOR_HOST, to sign users up")
	}
	raw, err := rawClient(ctx, f.suiteRawProject())
	if err != nil {
		return err
	}
	const users = 1000
	fmt.Fprintf(os.Stderr, "== reactions: signing %d users up\n", users)
	tokens, err := loadtest.SignUp(ctx, host, users)
	if err != nil {
		return err
	}
	// Warm up, not recorded: the emulator's JVM compiles its hot paths
	// during the first seconds of load, which would penalise the first
	// mode (the whole suite warms up with increments).
	warm := opts
	warm.Duration = 5 * time.Second
	if err := reactionsSuite(ctx, f, warm, &report.Suite{Rounds: 1}, raw, tokens); err != nil {
		return err
	}
	s := report.Suite{Rounds: f.rounds}
	if err := reactionsSuite(ctx, f, opts, &s, raw, tokens); err != nil {
		return err
	}
	report.Reactions(os.Stdout, s.Reactions)
	return nil
}

// reactionsScenario is `loadgen reactions`: one mode, as `loadgen likes`.
func reactionsScenario(ctx context.Context, f flags, opts loadtest.Options, fns *loadtest.Functions, counters loadtest.Counters) (reactions.ReactionsReport, error) {
	spec := benchReactions
	spec.Shards = f.shards // the raw counter's; the functions' is the kind's num_shards
	var r reactions.Reactor
	if raw, ok := counters.(*loadtest.Raw); ok {
		r = &reactions.RawReactions{Raw: raw, Count: max(f.users, f.concurrency)}
	} else {
		if len(fns.Tokens) == 0 {
			return reactions.ReactionsReport{}, errors.New("reactions: -users N (or -tokens) for users who react")
		}
		same, err := rawClient(ctx, f.project) // the member documents
		if err != nil {
			return reactions.ReactionsReport{}, err
		}
		r = &reactions.FunctionsReactions{Functions: fns, DB: same.Client}
	}
	rep, err := reactions.Reactions(ctx, r, f.mode, opts, spec)
	printReactions(os.Stdout, rep)
	if err == nil && !rep.Check.Exact {
		err = errors.New("the reactions are NOT exact")
	}
	return rep, err
}

// printReactions prints a run and its check.
func printReactions(w io.Writer, r reactions.ReactionsReport) {
	printReport(w, r.Report)
	fmt.Fprintf(w, "users %d; reacting at the end %d %v; read %d %v; member documents %d %v\n",
		r.Users, r.Expected.Count, r.Expected.Counts, r.Read.Count, r.Read.Counts, r.MemberDocs.Count, r.MemberDocs.Counts)
}

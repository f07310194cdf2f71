package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/feed"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/report"
)

// feedKinds are the page's kinds, as scripts/bench.sh declares them:
// likes (unique), reactions (choices), views (plain), viewers (distinct);
// the reader has member documents of the first two.
var feedKinds, feedMemberKinds = []string{"likes", "reactions", "views", "viewers"}, []string{"likes", "reactions"}

// feedPages is how many page loads each way is timed over, and
// hotReaders how many new readers read the hot page, 64 at once.
const (
	feedPages  = 20
	hotReaders = 1000
)

// feedSuite measures a feed's page of 20 posts: the three ways to read it
// (a listener per document, a getCounter per counter, one getCounters),
// each as a reader whose counts are warm, and a hot page.
func feedSuite(ctx context.Context, f flags, s *report.Suite) error {
	host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")
	if host == "" {
		return errors.New("feed: FIREBASE_AUTH_EMULATOR_HOST, to sign readers up")
	}
	step := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "== "+format+"\n", args...) }
	step("feed: signing %d readers up", hotReaders+feedPages+1)
	tokens, err := loadtest.SignUp(ctx, host, hotReaders+feedPages+1)
	if err != nil {
		return err
	}
	db, err := rawClient(ctx, f.project)
	if err != nil {
		return err
	}
	fns := loadtest.NewFunctions([]string{f.url}, nil, 64)
	run := time.Now().UnixNano()
	page := feed.Page{Kinds: feedKinds, MemberKinds: feedMemberKinds}
	for i := range 20 {
		page.Posts = append(page.Posts, fmt.Sprintf("feed-%d-%d", run, i))
	}
	reader := tokens[0]
	step("feed: a page of %d posts × %d kinds, rolled up", len(page.Posts), len(page.Kinds))
	if err := feed.Prepare(ctx, fns, page, reader); err != nil {
		return err
	}
	uid, err := loadtest.UIDOf(reader)
	if err != nil {
		return err
	}
	r := feed.Report{Page: len(page.Posts) * len(page.Kinds)}
	step("feed: %d page loads a way", feedPages)
	r.Ways = append(r.Ways, feed.Listeners(ctx, db.Client, page, uid, feedPages))
	each, err := feed.GetCounterEach(ctx, fns, page, reader, feedPages)
	if err != nil {
		return err
	}
	one, err := feed.GetCounters(ctx, fns, page, tokens[1:1+feedPages], feedPages)
	if err != nil {
		return err
	}
	alone, err := feed.CountsAlone(ctx, fns, page, feedPages)
	if err != nil {
		return err
	}
	r.Ways = append(r.Ways, each, one, alone)
	r.OneGetCounter = feed.OneGetCounter(ctx, fns, "likes:"+page.Posts[0], reader, 200)
	step("feed: a hot page, %d new readers, 64 at once", hotReaders)
	if r.Hot, err = feed.HotPage(ctx, fns, page, tokens[1+feedPages:], 64, f.feedCache); err != nil {
		return err
	}
	s.Feed = &r
	return nil
}

// feedOnly is the feed scenario (and `-only feed suite`): the feed's part
// alone, its table printed; the results files are left as they are.
func feedOnly(ctx context.Context, f flags) error {
	var s report.Suite
	if err := feedSuite(ctx, f, &s); err != nil {
		return err
	}
	report.Feed(os.Stdout, s.Feed)
	return nil
}

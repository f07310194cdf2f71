package report

import (
	"strings"
	"testing"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/reactions"
)

func TestReactionsJudgesGroupCommitAgainstRaw(t *testing.T) {
	run := func(mode string, rate float64, exact bool) reactions.ReactionsReport {
		tally := reactions.Tally{Count: 3, Counts: map[string]int64{"love": 2, "like": 1}}
		r := reactions.ReactionsReport{Users: 10, Choices: []string{"like", "love"}, Expected: tally, Read: tally, MemberDocs: tally,
			Report: loadtest.Report{Mode: mode, Concurrency: 64, Shards: 10, Check: &loadtest.Check{Exact: exact}}}
		r.Throughput = rate
		return r
	}
	var b strings.Builder
	Reactions(&b, []reactions.ReactionsReport{run("functions", 300, true), run("raw", 200, true)})
	for _, want := range []string{"10 shards and 2 choices", "| like 1 · love 2 |", "beat the raw transactions | 1.50× | **met** |", "| every run exact | true | **met** |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	Reactions(&b, []reactions.ReactionsReport{run("functions", 100, true), run("raw", 200, false)})
	if out := b.String(); !strings.Contains(out, "0.50× | **not met** |") || !strings.Contains(out, "| every run exact | false | **not met** |") {
		t.Errorf("a slower, inexact run is judged\n%s", out)
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/cmd/loadgen/loadtest/views"
)

func TestViewsJudgesSketchesAgainstMemberDocuments(t *testing.T) {
	run := func(name string, read int64, writes, bytes float64, kept int64) views.Report {
		return views.Report{Counter: name, Viewers: 1000, Seen: 900, Read: read, Off: float64(max(read-900, 900-read)) / 900,
			WritesPerView: writes, BytesPerView: bytes, Kept: views.Storage{Docs: 3, Bytes: kept},
			Report: loadtest.Report{Concurrency: 64, Shards: 10}}
	}
	var b strings.Builder
	Views(&b, []views.Report{run("distinct", 905, 0.1, 900, 9000), run("unique", 900, 0.5, 100, 90_000)})
	for _, want := range []string{"one counter of 10 shards;", "| 1000 | 64 | distinct | 0 |", "(2.44%) of the people seen | 1000 | 0.56% off | **met** |",
		"| 1000 | read 900 of 900 seen | **met** |", "| 1000 | 0.100 against 0.500 | **met** |", "| 1000 | 900 against 100 | **not met** |", "| 1000 | 9000 bytes in 3 documents, against 90000 in 3 | **met** |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	Views(&b, []views.Report{run("distinct", 1000, 0.1, 900, 9000), run("unique", 899, 0.5, 100, 90_000)})
	if out := b.String(); !strings.Contains(out, "| 1000 | 11.11% off | **not met** |") || !strings.Contains(out, "| 1000 | read 899 of 900 seen | **not met** |") {
		t.Errorf("an estimate off by 11%% and an inexact unique counter are judged\n%s", out)
	}
}

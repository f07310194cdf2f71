package sim

import (
	"flag"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/simsched"
)

var (
	seedFlag    = flag.Uint64("seed", 0, "replay only this simulation seed")
	simsFlag    = flag.Int("sims", 1000, "random schedules TestSimulation runs (a long run: -sims 30000, docs/design/simulation.md)")
	summaryFlag = flag.Bool("summary", false, "one line per failing seed: its first problem")
)

func TestSimulation(t *testing.T) {
	seeds := simsched.Seeds(*seedFlag, *simsFlag)
	failures := 0
	for _, seed := range seeds {
		problems, trace, cfg := runSeed(seed, *seedFlag != 0)
		if trace != nil {
			t.Log("trace:\n" + strings.Join(trace, "\n"))
		}
		if len(problems) == 0 {
			continue
		}
		failures++
		if *summaryFlag {
			t.Logf("seed %d: %s", seed, problems[0])
			continue
		}
		if failures <= 5 {
			t.Errorf("seed %d (replay: go test ./internal/sim -run TestSimulation -seed %d -v): %+v\n%s",
				seed, seed, cfg, strings.Join(problems, "\n"))
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d schedules failed", failures, len(seeds))
	}
}

func runSeed(seed uint64, tracing bool) ([]string, []string, config) {
	r := rand.New(rand.NewPCG(seed, 0))
	cfg := randomConfig(r)
	w := newWorld(r, cfg)
	w.tracing = tracing
	w.randomSchedule()
	problems := w.run()
	if tracing {
		return problems, w.trace, cfg
	}
	return problems, nil, cfg
}

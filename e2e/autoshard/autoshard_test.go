// Package autoshard runs the functions with AUTO_SHARDING=on against an
// emulator of its own, whose trigger events reach rollupCounter through the
// local bridge: the roll-up measures each counter's commit rate and grows
// the hot ones.
package autoshard

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
)

const project = "demo-autoshard"

var (
	base, emulatorAddr, triggerAddr string
	logs                            *testenv.Logs
)

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(false)
	emulatorAddr, triggerAddr = testenv.PrivateEmulatorAddrs()
	testenv.Setenv(map[string]string{
		"GOOGLE_CLOUD_PROJECT":    project,
		"FIRESTORE_EMULATOR_HOST": emulatorAddr,
		"AUTH":                    "off",
		"AUTO_SHARDING":           "on",
		"AUTO_SHARDING_TARGET":    "2", // commits per second per shard: see TestAutoShardingGrowsHotCountersOnly
		"AUTO_SHARDING_INTERVAL":  "2s",
		"ROLLUP_CADENCE":          "500ms",
		"GROUP_COMMIT_MAX_WAIT":   "2ms",
		"SHARD_COUNT_CACHE":       "1s",
		"LOG_LEVEL":               "warn",
	})
	var err error
	if logs, err = testenv.CaptureStdout(); err == nil {
		base, err = testenv.StartFunctions()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	logs.Close()
	os.Exit(code)
}

func post(t *testing.T, fn, body string) testenv.Response {
	t.Helper()
	return testenv.Do(t, "POST", base+"/"+fn, body)
}

type counterState struct {
	Count     int64 `json:"count"`
	NumShards int   `json:"num_shards"`
	Reshard   *struct {
		From, To int
	} `json:"reshard"`
}

func eventual(t *testing.T, id string) counterState {
	t.Helper()
	var c counterState
	testenv.Do(t, "GET", base+"/getCounter?counter_id="+id, "").Decode(t, &c)
	return c
}

// TestAutoShardingGrowsHotCountersOnly hammers one counter past 2 commits
// per second on its one shard, while another gets one increment every 2
// s: the hot one grows, with its evidence logged, and the quiet one keeps
// its shard. The margins hold on a loaded machine: group commit makes the
// hot counter's commits one per commit's latency, more than 2 a second
// unless a commit takes half a second; the quiet one's rate is its
// client's, a quarter of the target whatever the machine.
func TestAutoShardingGrowsHotCountersOnly(t *testing.T) {
	testenv.StartEmulator(t, emulatorAddr, "--functions_emulator="+triggerAddr)
	testenv.ServeTriggers(t, emulatorAddr, project, triggerAddr, base)
	for _, id := range []string{"hot", "quiet"} {
		if r := post(t, "createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":1}`, id)); r.Status != http.StatusCreated {
			t.Fatal(r)
		}
	}

	stop := time.Now().Add(10 * time.Second)
	var hot atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if r := post(t, "incrementCounter", `{"counter_id":"hot"}`); r.Status == http.StatusOK {
					hot.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for time.Now().Before(stop) {
			post(t, "incrementCounter", `{"counter_id":"quiet"}`)
			time.Sleep(2 * time.Second)
		}
	})
	wg.Wait()
	time.Sleep(2 * time.Second) // the last roll-ups

	h, q := eventual(t, "hot"), eventual(t, "quiet")
	t.Logf("hot: %d increments, now %d shards (%+v); quiet: %d shards", hot.Load(), h.NumShards, h.Reshard, q.NumShards)
	if h.NumShards <= 1 || h.Reshard == nil || h.Reshard.From < 1 {
		t.Errorf("the hot counter kept %d shard(s)", h.NumShards)
	}
	if q.NumShards != 1 || q.Reshard != nil {
		t.Errorf("the quiet counter went to %d shards", q.NumShards)
	}
	lines := logs.Await(map[string]any{"message": "automatic sharding grows a counter", "counter_id": "hot"})
	if len(lines) == 0 {
		t.Fatal("no log line gives the evidence of the growth")
	}
	for _, key := range []string{"write_rate", "per_shard", "target_per_shard", "commits", "reason"} {
		if _, ok := lines[0][key]; !ok {
			t.Errorf("the growth's log line has no %s: %v", key, lines[0])
		}
	}
}

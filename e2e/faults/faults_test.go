// Package faults runs the functions against a Firestore emulator of their
// own, through a TCP proxy written here that delays, drops and resets
// connections, and swallows answers after their requests went through (so
// a commit is applied but its answer lost). A fake is the only way to get
// these faults between two processes on demand; everything else is real:
// functions-framework, the handlers, the emulator.
package faults

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/localdev/testenv"
	"github.com/shardcount/shardcount/internal/service"
)

// deadline is FIRESTORE_DEADLINE of the functions under test.
const deadline = 2 * time.Second

var (
	base  string
	fault *proxy
)

func TestMain(m *testing.M) {
	testenv.ExitWithoutEmulators(false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fault = &proxy{ln: ln, pairs: map[*pair]bool{}}
	go fault.serve()
	base = testenv.ServeFunctions(map[string]string{
		"GOOGLE_CLOUD_PROJECT":    "demo-faults",
		"FIRESTORE_EMULATOR_HOST": ln.Addr().String(), // the functions reach Firestore through the proxy
		"AUTH":                    "off",
		"FIRESTORE_DEADLINE":      deadline.String(),
		"RECONCILE_BUDGET":        "1s",
		"LOG_LEVEL":               "error",
	})
	os.Exit(m.Run())
}

// TestFaults runs in order against one private emulator: keyed increments
// through a chaotic network, an unkeyed increment whose answer is lost,
// and the emulator stopped outright, then started again.
func TestFaults(t *testing.T) {
	emu := testenv.StartEmulator(t, "")
	fault.setTarget(emu.Host)
	t.Run("keyed increments through faults are exact", func(t *testing.T) { keyedThroughFaults(t, emu) })
	t.Run("an unkeyed increment is applied at most once", func(t *testing.T) { unkeyedAtMostOnce(t, emu) })
	t.Run("a stopped emulator is a prompt 503, and a restart heals", func(t *testing.T) { stoppedEmulator(t, emu) })
}

// keyedThroughFaults sends 2,000 keyed increments of 1..5 or -5..-1 from
// clients that retry on 503, on timeouts and on broken connections with the
// same key, while the proxy resets, stalls and refuses connections. The
// counter must hold exactly the sum of the distinct keys acknowledged.
func keyedThroughFaults(t *testing.T, emu *testenv.Emulator) {
	id := fmt.Sprintf("faults-%d", time.Now().UnixNano())
	setup(t, "createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":1}`, id), "", http.StatusCreated)

	ctx, stopChaos := context.WithCancel(context.Background())
	chaosDone := make(chan struct{})
	go func() { defer close(chaosDone); fault.chaos(ctx) }()

	const n, workers = 2000, 32
	client := &http.Client{Timeout: 3 * time.Second}
	var (
		acked, failedAttempts atomic.Int64
		mu                    sync.Mutex
		ackedSum              int64
		gaveUp                []string
		wg                    sync.WaitGroup
		jobs                  = make(chan int)
	)
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				delta := int64(1 + i%5)
				if i%2 == 1 {
					delta = -delta
				}
				key := fmt.Sprintf("%s-key-%d", id, i)
				body := fmt.Sprintf(`{"counter_id":%q,"delta":%d}`, id, delta)
				ok := false
				for attempt := 0; attempt < 200 && !ok; attempt++ {
					status, resp, err := send(client, "incrementCounter", body, key)
					switch {
					case err == nil && status == http.StatusOK:
						ok = true
					case err == nil && status != http.StatusServiceUnavailable && status < 500:
						t.Errorf("key %s: %d %s", key, status, resp)
						ok = true // a 4xx will not change with a retry
					default:
						failedAttempts.Add(1)
						time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
					}
				}
				mu.Lock()
				if ok {
					acked.Add(1)
					ackedSum += delta
				} else {
					gaveUp = append(gaveUp, key)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	stopChaos()
	<-chaosDone

	t.Logf("%d increments acknowledged, %d failed attempts retried; proxy: %d resets, %d swallowed answers",
		acked.Load(), failedAttempts.Load(), fault.resets.Load(), fault.swallowed.Load())
	if len(gaveUp) > 0 {
		t.Errorf("%d increments never acknowledged, e.g. %s", len(gaveUp), gaveUp[0])
	}
	if failedAttempts.Load() == 0 || fault.swallowed.Load() == 0 {
		t.Errorf("the faults did not bite: %d failed attempts, %d swallowed answers", failedAttempts.Load(), fault.swallowed.Load())
	}
	// Read the emulator directly, not through the proxy.
	fs := testenv.FirestoreAt(t, emu.Host, "demo-faults")
	res, err := fs.Collection("counters/"+id+"/shards").NewAggregationQuery().WithSum("count", "total").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total, _ := res["total"].(int64)
	if total != ackedSum {
		t.Errorf("the shards hold %d, the acknowledged keys sum to %d: an increment was counted twice or lost", total, ackedSum)
	}
	keys, err := fs.Collection("counters/" + id + "/idempotency_keys").Documents(context.Background()).GetAll()
	if err != nil || len(keys) != n {
		t.Errorf("%d key records (err %v), want one per key: %d", len(keys), err, n)
	}
}

// unkeyedAtMostOnce: the commit of an increment without a key reaches
// Firestore but its answer is lost. The function must answer 503 and not
// send the commit again; the generated client used to retry it, counting
// the increment twice under one 200.
func unkeyedAtMostOnce(t *testing.T, emu *testenv.Emulator) {
	id := fmt.Sprintf("unkeyed-%d", time.Now().UnixNano())
	setup(t, "createCounter", fmt.Sprintf(`{"counter_id":%q,"num_shards":1}`, id), "", http.StatusCreated)
	setup(t, "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id), id+"-warm", http.StatusOK) // warm: shard count cached, connection up

	before := fault.upBytes.Load()
	fault.setSwallow(true)
	done := make(chan int)
	go func() {
		status, _, _ := send(http.DefaultClient, "incrementCounter", fmt.Sprintf(`{"counter_id":%q}`, id), "")
		done <- status
	}()
	for deadline := time.Now().Add(5 * time.Second); fault.upBytes.Load() == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the commit never left the function")
		}
	}
	time.Sleep(300 * time.Millisecond) // the emulator applies it; its answer is swallowed
	fault.resetAll()
	fault.setSwallow(false)
	status := <-done

	fs := testenv.FirestoreAt(t, emu.Host, "demo-faults")
	snap, err := fs.Doc("counters/" + id + "/shards/0").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	count := snap.Data()["count"].(int64)
	if count != 2 {
		// 1 warm-up + the lost one, applied once.
		t.Errorf("count = %d after one more increment, want 2 (applied exactly once); answer %d", count, status)
	}
	if status != http.StatusServiceUnavailable {
		t.Errorf("the increment whose answer was lost got %d, want 503 (its outcome is unknown)", status)
	}
}

// stoppedEmulator stops the emulator outright: every function answers 503
// within its deadline (before, they hung until the client gave up). After
// a restart the same functions work again, without being restarted.
func stoppedEmulator(t *testing.T, emu *testenv.Emulator) {
	emu.Stop()
	for _, spec := range service.Catalog {
		start := time.Now()
		var status int
		var body string
		switch {
		case spec.Kind == service.FirestoreTrigger:
			status, body = deliverEvent(t, spec.Name)
		case spec.Method == http.MethodGet:
			q := map[string]string{"getCounter": "?consistency=strong&counter_id=c1", "queryInstruments": "?field=exchange&value=E",
				"topCounters": "?window=hour", "listCounters": "", "listMembers": "?counter_id=c1"}[spec.Name]
			resp, err := http.Get(base + "/" + spec.Name + q)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			status, body = resp.StatusCode, string(b)
		default:
			req := map[string]string{
				"createCounter":     `{"counter_id":"c1"}`,
				"incrementCounter":  `{"counter_id":"c1"}`,
				"getCounters":       `{"counter_ids":["c1"]}`,
				"reshardCounter":    `{"counter_id":"c1","num_shards":2}`,
				"resetCounter":      `{"counter_id":"c1"}`,
				"deleteCounter":     `{"counter_id":"c1"}`,
				"updateCounter":     `{"counter_id":"c1","ranked":false}`,
				"eraseMember":       `{"uid":"u1"}`,
				"reconcileCounters": `{}`,
				"recordInstruments": `{"instruments":[{"symbol":"A","price":{"currency":"USD","micros":1},"exchange":"E","instrumentType":"etf","timestamp":"2019-01-01T00:00:00Z"}]}`,
			}[spec.Name]
			if req == "" {
				t.Errorf("no request for %s: add one to this test", spec.Name)
				continue
			}
			var b []byte
			status, b, _ = send(http.DefaultClient, spec.Name, req, "")
			body = string(b)
		}
		took := time.Since(start)
		// The answer is due at the deadline; 3 s more cover a loaded
		// machine's scheduling, far below a request left hanging (the
		// client's own timeout, or gRPC's reconnection backoff).
		if status != http.StatusServiceUnavailable || took > deadline+3*time.Second {
			t.Errorf("%s with Firestore down: %d after %s, want 503 within %s: %s", spec.Name, status, took.Round(time.Millisecond), deadline, body)
		}
	}
	emu.Start()
	// gRPC reconnects with a backoff capped at 5 s (firestoredb.Open).
	// A create that timed out may still have committed (its outcome is
	// unknown), so after such an answer ALREADY_EXISTS is the create's own.
	restarted := time.Now()
	unknown := false
	for {
		status, body, err := send(http.DefaultClient, "createCounter", `{"counter_id":"after-restart","num_shards":3}`, "")
		if err == nil && (status == http.StatusCreated || unknown && status == http.StatusConflict) {
			break
		}
		unknown = unknown || err != nil || status == http.StatusServiceUnavailable
		if time.Since(restarted) > 10*time.Second {
			t.Fatalf("10 s after Firestore came back, createCounter still answers %d %s %v", status, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("serving again %s after the restart", time.Since(restarted).Round(time.Millisecond))
	setup(t, "incrementCounter", `{"counter_id":"after-restart","delta":4}`, "after-restart-4", http.StatusOK)
}

func send(c *http.Client, fn, body, key string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/"+fn, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// setup sends a request that prepares what is under test, and retries
// what a client retries (a 503, a broken connection; an increment with
// its key) for up to 30 s: on a loaded machine the first calls (a cold
// connection, the emulator warming up) may outlast FIRESTORE_DEADLINE,
// which is not what these tests are about. A creation whose 503 hid its
// commit answers 409 next: its own.
func setup(t *testing.T, fn, body, key string, want int) {
	t.Helper()
	unknown := false
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		status, resp, err := send(http.DefaultClient, fn, body, key)
		switch {
		case err == nil && (status == want || unknown && fn == "createCounter" && status == http.StatusConflict):
			return
		case err == nil && status != http.StatusServiceUnavailable:
			t.Fatalf("%s %s: %d %s, want %d", fn, body, status, resp, want)
		case time.Since(start) > 30*time.Second:
			t.Fatalf("%s %s: still %d %s %v after 30 s, want %d", fn, body, status, resp, err, want)
		}
		unknown = true
	}
}

// deliverEvent sends rollupCounter the CloudEvent of a shard write.
func deliverEvent(t *testing.T, fn string) (int, string) {
	resp, err := http.DefaultClient.Do(testenv.ShardEvent(t, base+"/"+fn, "demo-faults", "c1", 0, 1, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// proxy is a TCP proxy that can fail the way networks and servers do.
type proxy struct {
	ln net.Listener

	mu      sync.Mutex
	target  string
	down    bool          // new connections are reset at once
	swallow bool          // requests go through, answers are dropped
	delay   time.Duration // each answer chunk waits this long
	pairs   map[*pair]bool

	upBytes   atomic.Int64 // bytes forwarded to the emulator
	resets    atomic.Int64
	swallowed atomic.Int64
}

type pair struct{ client, server net.Conn }

func (p *proxy) setTarget(addr string) { p.mu.Lock(); p.target = addr; p.mu.Unlock() }
func (p *proxy) setSwallow(on bool)    { p.mu.Lock(); p.swallow = on; p.mu.Unlock() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *proxy) handle(c net.Conn) {
	p.mu.Lock()
	down, target := p.down, p.target
	p.mu.Unlock()
	if down || target == "" {
		reset(c)
		return
	}
	s, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		reset(c)
		return
	}
	pr := &pair{c, s}
	p.mu.Lock()
	p.pairs[pr] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pairs, pr)
		p.mu.Unlock()
		c.Close()
		s.Close()
	}()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				p.upBytes.Add(int64(n))
				if _, err := s.Write(buf[:n]); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		s.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			swallow, delay := p.swallow, p.delay
			p.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay)
			}
			if swallow {
				p.swallowed.Add(1)
			} else if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// resetAll resets every connection, both sides.
func (p *proxy) resetAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pr := range p.pairs {
		reset(pr.client)
		reset(pr.server)
		p.resets.Add(1)
	}
}

func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0) // close with RST, as a crashed peer would
	}
	c.Close()
}

// chaos fails the network at random until ctx ends: resets, answers
// swallowed then reset (commits applied, answers lost), slow answers, and
// refused connections, with healthy stretches between.
func (p *proxy) chaos(ctx context.Context) {
	sleep := func(lo, hi int) { time.Sleep(time.Duration(lo+rand.IntN(hi-lo)) * time.Millisecond) }
	for first := true; ctx.Err() == nil; first = false {
		sleep(50, 300)
		action := rand.IntN(6)
		if first {
			action = 1 // at least one commit applied with its answer lost
		}
		switch action {
		case 0:
			p.resetAll()
		case 1:
			p.setSwallow(true)
			sleep(30, 250)
			p.resetAll()
			p.setSwallow(false)
		case 2:
			p.mu.Lock()
			p.delay = time.Duration(50+rand.IntN(400)) * time.Millisecond
			p.mu.Unlock()
			sleep(100, 600)
			p.mu.Lock()
			p.delay = 0
			p.mu.Unlock()
		case 3:
			p.mu.Lock()
			p.down = true
			p.mu.Unlock()
			p.resetAll()
			sleep(100, 700)
			p.mu.Lock()
			p.down = false
			p.mu.Unlock()
		}
	}
}

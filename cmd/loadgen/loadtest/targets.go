package loadtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/service"
)

// Counters is what a scenario needs of the system under test. Functions
// goes through the HTTP functions; Raw goes straight to Firestore with the
// Go client, the way the distributed-counter pages of the seeds do it, as a
// baseline.
type Counters interface {
	CreateCounter(ctx context.Context, id string, shards int) error
	// Increment adds 1 to one random shard.
	Increment(ctx context.Context, id string) Outcome
	// Strong returns the exact value now.
	Strong(ctx context.Context, id string) (int64, error)
	// Eventual returns the roll-up and the time it is exact at.
	Eventual(ctx context.Context, id string) (int64, time.Time, error)
}

// StatusError is an HTTP error answer of a function.
type StatusError struct {
	Status int
	Msg    string
}

func (e *StatusError) Error() string { return e.Msg }

// Functions calls the deployed or local HTTP functions: each request goes
// to one of Bases (several servers: several instances) and carries one of
// Tokens (several users), at random.
type Functions struct {
	Bases  []string
	Tokens []string // Firebase ID tokens when AUTH=required; none: no header
	// Admin, when set, is the ID token of an admin identity that creates
	// the counters (with USER_CREATE off, the deployed default, end users
	// may not).
	Admin string
	HTTP  *http.Client
}

// NewFunctions returns a client of the servers at bases, as the users of
// tokens, keeping enough idle connections for concurrency requests at once.
func NewFunctions(bases, tokens []string, concurrency int) *Functions {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	tr.MaxIdleConns = concurrency * len(bases)
	for i := range bases {
		bases[i] = strings.TrimSuffix(bases[i], "/")
	}
	return &Functions{Bases: bases, Tokens: tokens, HTTP: &http.Client{Transport: tr, Timeout: time.Minute}}
}

func (f *Functions) token() string {
	if len(f.Tokens) == 0 {
		return ""
	}
	return f.Tokens[rand.IntN(len(f.Tokens))]
}

func (f *Functions) Do(ctx context.Context, method, fn, query string, body any, out any) (int, error) {
	return f.DoAs(ctx, f.Bases[rand.IntN(len(f.Bases))], f.token(), method, fn, query, body, out)
}

// DoAs calls fn on the server at base, as the holder of token.
func (f *Functions) DoAs(ctx context.Context, base, token, method, fn, query string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/"+fn+query, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, &StatusError{Status: resp.StatusCode, Msg: fmt.Sprintf("%s: %s %s", fn, resp.Status, bytes.TrimSpace(b))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %w", fn, err)
		}
	}
	return resp.StatusCode, nil
}

// Stats reads what the function servers counted, summed over all of them
// (served locally at /debug/shardcount by cmd/devserver).
func (f *Functions) Stats(ctx context.Context) (service.Stats, error) {
	total := service.Stats{Firestore: map[string]firestoredb.OpCounts{}}
	for _, base := range f.Bases {
		var s service.Stats
		if _, err := f.DoAs(ctx, base, "", "GET", "debug/shardcount", "", nil, &s); err != nil {
			return service.Stats{}, err
		}
		total.RollupEvents += s.RollupEvents
		total.RSSBytes = max(total.RSSBytes, s.RSSBytes)
		total.CPUSeconds += s.CPUSeconds
		for label, o := range s.Firestore {
			t := total.Firestore[label]
			t.Commits += o.Commits
			t.FailedCommits += o.FailedCommits
			t.Writes += o.Writes
			t.WrittenBytes += o.WrittenBytes
			t.Reads += o.Reads
			t.Aggregations += o.Aggregations
			total.Firestore[label] = t
		}
	}
	return total, nil
}

// Reshard changes a counter's shard count through reshardCounter.
func (f *Functions) Reshard(ctx context.Context, id string, n int) error {
	_, err := f.Do(ctx, "POST", "reshardCounter", "", map[string]any{"counter_id": id, "num_shards": n}, nil)
	return err
}

// Reconcile runs reconcileCounters once: the scheduled run over the
// counters active since the last one, or with full a stretch of the full
// audit of every counter.
func (f *Functions) Reconcile(ctx context.Context, full bool) (SweepRun, error) {
	var r SweepRun
	body := map[string]any{}
	if full {
		body["full"] = true
	}
	_, err := f.Do(ctx, "POST", "reconcileCounters", "", body, &r)
	return r, err
}

// SweepRun is reconcileCounters' answer.
type SweepRun struct {
	Mode         string `json:"mode"`
	Checked      int    `json:"checked"`
	Corrected    int    `json:"corrected"`
	Failed       int    `json:"failed"`
	Again        int    `json:"again"`
	PassComplete bool   `json:"pass_complete"`
}

func (f *Functions) CreateCounter(ctx context.Context, id string, shards int) error {
	return f.create(ctx, map[string]any{"counter_id": id, "num_shards": shards})
}

// create calls createCounter as the admin identity, if there is one.
func (f *Functions) create(ctx context.Context, body map[string]any) error {
	token := cmp.Or(f.Admin, f.token())
	_, err := f.DoAs(ctx, f.Bases[rand.IntN(len(f.Bases))], token, "POST", "createCounter", "", body, nil)
	return err
}

func (f *Functions) Increment(ctx context.Context, id string) Outcome {
	status, err := f.Do(ctx, "POST", "incrementCounter", "", map[string]any{"counter_id": id}, nil)
	return Outcome{Status: status, OK: err == nil}
}

type reading struct {
	Count int64  `json:"count"`
	AsOf  string `json:"as_of"`
}

func (f *Functions) read(ctx context.Context, id, consistency string) (int64, time.Time, error) {
	var r reading
	if _, err := f.Do(ctx, "GET", "getCounter", "?consistency="+consistency+"&counter_id="+url.QueryEscape(id), nil, &r); err != nil {
		return 0, time.Time{}, err
	}
	at, err := time.Parse(time.RFC3339Nano, r.AsOf)
	return r.Count, at, err
}

func (f *Functions) Strong(ctx context.Context, id string) (int64, error) {
	n, _, err := f.read(ctx, id, "strong")
	return n, err
}

func (f *Functions) Eventual(ctx context.Context, id string) (int64, time.Time, error) {
	return f.read(ctx, id, "eventual")
}

// Instrument sends a one-instrument batch to recordInstruments.
func (f *Functions) Instrument(ctx context.Context, in map[string]any) Outcome {
	status, err := f.Do(ctx, "POST", "recordInstruments", "", map[string]any{"instruments": []any{in}}, nil)
	return Outcome{Status: status, OK: err == nil}
}

// QueryInstruments asks queryInstruments for a page.
func (f *Functions) QueryInstruments(ctx context.Context, field, value string, limit int) Outcome {
	q := "?field=" + url.QueryEscape(field) + "&value=" + url.QueryEscape(value) + "&limit=" + strconv.Itoa(limit)
	status, err := f.Do(ctx, "GET", "queryInstruments", q, nil, nil)
	return Outcome{Status: status, OK: err == nil}
}

// Raw works on Firestore directly with the Go client, as the seeds'
// distributed counter does: a counter document with num_shards, an
// Increment on a random shard, and a read that streams every shard.
type Raw struct {
	Client *firestore.Client

	shards map[string]int
}

// NewRaw returns the raw baseline on client.
func NewRaw(client *firestore.Client) *Raw { return &Raw{Client: client, shards: map[string]int{}} }

func (r *Raw) CreateCounter(ctx context.Context, id string, shards int) error {
	r.shards[id] = shards
	_, err := r.Client.Doc("counters/"+id).Set(ctx, map[string]any{"num_shards": shards, "count": 0})
	return err
}

// Shards is how many shards raw counter id was created with.
func (r *Raw) Shards(id string) int { return r.shards[id] }

func (r *Raw) Increment(ctx context.Context, id string) Outcome {
	shard := strconv.Itoa(rand.IntN(r.shards[id]))
	_, err := r.Client.Doc("counters/"+id+"/shards/"+shard).Set(ctx,
		map[string]any{"count": firestore.Increment(1)}, firestore.MergeAll)
	if err != nil {
		return Outcome{Status: 0}
	}
	return Outcome{Status: 200, OK: true}
}

// Strong streams every shard and adds them up: one billed read per shard.
func (r *Raw) Strong(ctx context.Context, id string) (int64, error) {
	it := r.Client.Collection("counters/" + id + "/shards").Documents(ctx)
	defer it.Stop()
	var total int64
	for {
		doc, err := it.Next()
		if err == iterator.Done {
			return total, nil
		}
		if err != nil {
			return 0, err
		}
		n, _ := doc.Data()["count"].(int64)
		total += n
	}
}

// Sum adds the shards up with a SUM aggregation: one billed read per 1,000.
func (r *Raw) Sum(ctx context.Context, id string) (int64, error) {
	res, err := r.Client.Collection("counters/"+id+"/shards").NewAggregationQuery().WithSum("count", "total").Get(ctx)
	if err != nil {
		return 0, err
	}
	var out struct {
		Total int64 `firestore:"total"`
	}
	if err := res.DataTo(&out); err != nil {
		return 0, err
	}
	return out.Total, nil
}

// Eventual reads the counter document, which the raw baseline never rolls
// up itself.
func (r *Raw) Eventual(ctx context.Context, id string) (int64, time.Time, error) {
	snap, err := r.Client.Doc("counters/" + id).Get(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, _ := snap.Data()["count"].(int64)
	return n, snap.UpdateTime, nil
}

// Counters writes n counters of one shard each straight to Firestore, the
// roll-up of every tenth one stale, for the reconcile sweep to check.
func (r *Raw) Counters(ctx context.Context, prefix string, n int) error {
	return r.bulk(ctx, 0, n, func(i int) map[string]map[string]any {
		id := fmt.Sprintf("%s-%06d", prefix, i)
		rolled := 2 // the shard's count
		if i%10 == 0 {
			rolled = 1 // stale: reconcile corrects it
		}
		return map[string]map[string]any{
			"counters/" + id:               {"num_shards": 1, "count": rolled, "rollup_as_of": time.Unix(0, 0)},
			"counters/" + id + "/shards/0": {"count": 2, "commits": 1, "slow": 0},
		}
	})
}

// bulk sets, with one BulkWriter, the documents docs(i) gives (by path)
// for i in [from, to), and waits for every one.
func (r *Raw) bulk(ctx context.Context, from, to int, docs func(i int) map[string]map[string]any) error {
	bw := r.Client.BulkWriter(ctx)
	defer bw.End()
	var jobs []*firestore.BulkWriterJob
	for i := from; i < to; i++ {
		for path, data := range docs(i) {
			job, err := bw.Set(r.Client.Doc(path), data)
			if err != nil {
				return err
			}
			jobs = append(jobs, job)
		}
	}
	bw.End()
	for _, j := range jobs {
		if _, err := j.Results(); err != nil {
			return err
		}
	}
	return nil
}

// ShardDocs counts the shard documents of counter id.
func (r *Raw) ShardDocs(ctx context.Context, id string) (int, error) {
	refs, err := r.Client.Collection("counters/" + id + "/shards").DocumentRefs(ctx).GetAll()
	return len(refs), err
}

// Fill sets every shard of counter id to 1, so reads touch all of them.
func (r *Raw) Fill(ctx context.Context, id string, shards int) error {
	return r.bulk(ctx, 0, shards, func(i int) map[string]map[string]any {
		return map[string]map[string]any{"counters/" + id + "/shards/" + strconv.Itoa(i): {"count": 1}}
	})
}

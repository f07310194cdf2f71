// Package testenv connects tests to the real Firestore and Auth emulators
// started by scripts/test.sh and serves the real functions through
// functions-framework in the test process. It is for tests only.
//
// Each test binary works in its own demo- project, so packages running in
// parallel against one emulator never see each other's data.
//
// Without an emulator, tests that need one skip with a message saying how
// to run them; scripts/test.sh sets SHARDCOUNT_REQUIRE_EMULATORS=1, so
// there a missing emulator fails instead.
package testenv

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"google.golang.org/api/iterator"

	"github.com/shardcount/shardcount/internal/firestoredb"
)

// EmulatorHost returns FIRESTORE_EMULATOR_HOST, or an error saying how to
// get one.
func EmulatorHost() (string, error) {
	if h := os.Getenv("FIRESTORE_EMULATOR_HOST"); h != "" {
		return h, nil
	}
	return "", fmt.Errorf("FIRESTORE_EMULATOR_HOST is not set: run the tests with scripts/test.sh, which starts the Firestore emulator")
}

// NeedEmulators skips tb (or, under scripts/test.sh, fails it) when the
// emulators it needs are not running; err says which.
func NeedEmulators(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if os.Getenv("SHARDCOUNT_REQUIRE_EMULATORS") != "" {
		tb.Fatal(err)
	}
	tb.Skip(err)
}

// Missing reports, for TestMain, whether the emulators a package needs are
// missing: it prints why and returns true when the package should skip
// (exit 0), and exits with a failure under scripts/test.sh.
func Missing(errs ...error) bool {
	for _, err := range errs {
		if err == nil {
			continue
		}
		if os.Getenv("SHARDCOUNT_REQUIRE_EMULATORS") != "" {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping the package:", err)
		return true
	}
	return false
}

// ExitWithoutEmulators ends a TestMain whose package needs the Firestore
// emulator, and the Auth emulator too when auth is set, as Missing says.
func ExitWithoutEmulators(auth bool) {
	_, fsErr := EmulatorHost()
	var authErr error
	if auth {
		_, authErr = AuthEmulatorHost()
	}
	if Missing(fsErr, authErr) {
		os.Exit(0)
	}
}

// DB opens the project's own Firestore access on the emulator.
func DB(tb testing.TB, project string) *firestoredb.DB {
	tb.Helper()
	host, err := EmulatorHost()
	NeedEmulators(tb, err)
	db, err := firestoredb.Open(context.Background(), project, Database(), host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// NewProjectID returns a fresh demo- project id (emulator-only by Firebase
// convention).
func NewProjectID(prefix string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return "demo-" + prefix + "-" + string(b)
}

// Database is the Firestore database the tests and the functions they
// start use: FIRESTORE_DATABASE, which scripts/test.sh sets to a named
// database for one whole suite, or (default).
func Database() string { return cmp.Or(os.Getenv("FIRESTORE_DATABASE"), firestoredb.DefaultDatabase) }

// Firestore returns an admin client of project on the emulator.
func Firestore(tb testing.TB, project string) *firestore.Client {
	tb.Helper()
	_, err := EmulatorHost()
	NeedEmulators(tb, err)
	c, err := firestore.NewClientWithDatabase(context.Background(), project, Database())
	if err != nil {
		tb.Fatalf("firestore client: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Setenv sets the environment of the functions served by StartFunctions; it
// is for TestMain, where t.Setenv is not available.
func Setenv(vars map[string]string) {
	for k, v := range vars {
		os.Setenv(k, v)
	}
}

// StartFunctions serves every function registered with functions-framework
// (import the module root for its init) on a free local port and returns the
// base URL; function f is at base+"/"+f. Call it from TestMain after Setenv.
func StartFunctions() (string, error) {
	addr, err := FreeAddr()
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	errc := make(chan error, 1)
	go func() { errc <- funcframework.StartHostPort(host, port) }()
	base := "http://" + addr
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-errc:
			return "", fmt.Errorf("functions-framework: %w", err)
		default:
		}
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			return base, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("functions-framework did not start on %s", addr)
}

// ServeFunctions is Setenv then StartFunctions, for TestMain: a failure
// ends the test binary.
func ServeFunctions(env map[string]string) string {
	Setenv(env)
	base, err := StartFunctions()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return base
}

// PrivateEmulatorAddrs returns free addresses for a package's own
// Firestore emulator and for the trigger events it delivers, for TestMain:
// a failure ends the test binary.
func PrivateEmulatorAddrs() (emulator, trigger string) {
	emulator, err := FreeAddr()
	if err == nil {
		trigger, err = FreeAddr()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return emulator, trigger
}

// FreeAddr returns a 127.0.0.1 address with a port nobody listens on. The
// port is below Linux's ephemeral range (32768 and up), as scripts/lib.sh's
// sc_free_port chooses: a port the kernel handed out would be free only
// until the kernel hands it again, to any outgoing connection of the
// parallel test packages, before the emulator meant for it binds.
func FreeAddr() (string, error) {
	var err error
	for range 50 {
		var l net.Listener
		l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err == nil {
			defer l.Close()
			return l.Addr().String(), nil
		}
	}
	return "", fmt.Errorf("no free port below the ephemeral range: %w", err)
}

// Response is an HTTP response read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request and reads the response; headers are name, value
// pairs, and a name given twice is sent twice.
func Do(tb testing.TB, method, url, body string, headers ...string) Response {
	tb.Helper()
	return Client{http.DefaultClient}.Do(tb, method, url, body, headers...)
}

// Client sends requests from one address.
type Client struct{ c *http.Client }

// From returns a client whose requests come from the loopback address ip
// (any of 127.0.0.0/8 reaches the local servers), so budgets that count
// per client address see distinct clients.
func From(ip string) Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}).DialContext
	return Client{&http.Client{Transport: tr}}
}

// Do sends a request and reads the response; headers are name, value pairs.
func (c Client) Do(tb testing.TB, method, url, body string, headers ...string) Response {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(headers); i += 2 {
		if seen[headers[i]] { // a header given twice is sent twice
			req.Header.Add(headers[i], headers[i+1])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
		seen[headers[i]] = true
	}
	resp, err := c.c.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Decode unmarshals the body into v, failing the test on error.
func (r Response) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode %q: %v", r.Body, err)
	}
}

// ErrorCode returns error.code of an error body, or "" if there is none.
func (r Response) ErrorCode() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

func (r Response) String() string {
	return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body))
}

// Dump returns the documents of the client's project, recursively:
// document path → fields as JSON. With roots (document paths such as
// "counters/c1"), only those documents and their subcollections are read.
// Two equal dumps mean nothing was written.
func Dump(tb testing.TB, c *firestore.Client, roots ...string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	ctx := context.Background()
	var walkDoc func(ref *firestore.DocumentRef)
	var walk func(it *firestore.CollectionIterator)
	walkDoc = func(ref *firestore.DocumentRef) {
		if snap, err := ref.Get(ctx); err == nil {
			b, _ := json.Marshal(snap.Data())
			out[ref.Path] = string(b) + " @" + snap.UpdateTime.Format(time.RFC3339Nano)
		}
		walk(ref.Collections(ctx))
	}
	walk = func(it *firestore.CollectionIterator) {
		for {
			coll, err := it.Next()
			if err == iterator.Done {
				return
			}
			if err != nil {
				tb.Fatalf("dump: %v", err)
			}
			docs := coll.DocumentRefs(ctx)
			for {
				ref, err := docs.Next()
				if err == iterator.Done {
					break
				}
				if err != nil {
					tb.Fatalf("dump: %v", err)
				}
				walkDoc(ref)
			}
		}
	}
	if len(roots) == 0 {
		walk(c.Collections(ctx))
	}
	for _, r := range roots {
		walkDoc(c.Doc(r))
	}
	return out
}

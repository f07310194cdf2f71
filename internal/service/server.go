package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardcount/shardcount/internal/auth"
	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/core"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/ledger"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/reconcile"
	"github.com/shardcount/shardcount/internal/telemetry"
)

// Server serves the functions of Catalog. Its settings are read once, on
// first use (at registration when deployed, where the environment is final;
// tests set theirs later); the clients they need are built on the first
// request. Registering it in init therefore never fails: a bad setting or a
// failed connection answers 503 and is logged, and the next request tries
// the connection again.
type Server struct {
	getenv func(string) string
	deps   Deps

	once   sync.Once
	cfg    config.Config
	cfgErr error
	log    *slog.Logger
	edge   *httpapi.Edge
	routes map[string]http.HandlerFunc // by function name

	shutdownTelemetry func(context.Context) error

	mu  sync.Mutex
	app *app
}

// app is everything a request needs, built once.
type app struct {
	cfg          config.Config
	db           *firestoredb.DB
	core         *core.Core
	reconciler   *reconcile.Reconciler
	authenticate httpapi.Authenticator // checks tokens; with AUTH=off only those sent

	// App Check's verifier, built on first use (appVerifier).
	appsMu       sync.Mutex
	apps         *auth.Apps
	appsBuild    chan struct{} // closed when the build under way ends
	appsErr      error         // the last build's failure…
	appsFailedAt time.Time     // …and when

	rollupEvents atomic.Int64 // rollupCounter invocations
}

// New returns a Server configured by getenv (usually os.Getenv). When
// deployed it reads its settings at once, and logs every one it refuses
// (docs/reference/settings.md); StartupError then reports them. Locally a refused
// setting answers 503 instead, with the same log line.
func New(getenv func(string) string) *Server { return NewWith(getenv, Deps{}) }

// Deps replace what a Server reaches outside the process: the whole
// service's simulation (internal/sim) runs Servers on its model of
// Firestore, with tokens of its own and seeded choices. The zero Deps are
// production's.
type Deps struct {
	// Firestore serves every call to Firestore; nil: Firestore itself (or
	// the emulator of FIRESTORE_EMULATOR_HOST).
	Firestore firestoredb.Firestore
	// Authenticate checks ID tokens; nil: Firebase Auth, with the Admin SDK.
	Authenticate httpapi.Authenticator
	// IntN picks a shard among n for key (a counter); nil: math/rand.
	IntN func(key string, n int) int
	// Now is the instance's clock; nil: time.Now.
	Now func() time.Time
	// Logs receives the log lines; nil: standard output.
	Logs io.Writer
}

// NewWith is New on deps.
func NewWith(getenv func(string) string, deps Deps) *Server {
	s := &Server{getenv: getenv, deps: deps}
	if getenv("K_SERVICE") != "" {
		s.setup()
	}
	return s
}

func (s *Server) setup() {
	s.once.Do(func() {
		s.cfg, s.cfgErr = config.FromEnv(s.getenv)
		if err := s.needsPageTokenKey(); err != nil {
			s.cfgErr = errors.Join(s.cfgErr, err)
		}
		consume, err := consumedBy(s.cfg.AppCheckConsume)
		if err != nil {
			s.cfgErr = errors.Join(s.cfgErr, err)
		}
		if len(consume) > 0 && s.cfg.AppCheck == config.AppCheckOff {
			s.cfgErr = errors.Join(s.cfgErr, errors.New("APP_CHECK_CONSUME consumes App Check tokens, which APP_CHECK=off does not check: set APP_CHECK=monitor or enforce"))
		}
		out := s.deps.Logs
		if out == nil {
			out = logging.Stdout
		}
		s.log = logging.New(out, s.cfg.LogLevel)
		s.startTelemetry()
		if s.cfgErr != nil {
			s.log.Error("the functions refuse to serve until the configuration is fixed", "error", s.cfgErr.Error())
		}
		s.edge = &httpapi.Edge{Logger: s.log, ProjectID: s.cfg.ProjectID, Origins: s.cfg.CORSOrigins, Deadline: s.cfg.FirestoreDeadline,
			AuthRequired: s.cfg.Auth == config.AuthRequired, Deployed: s.cfg.Deployed, Proxies: s.cfg.Proxies, Backend: s}
		if s.cfg.AppCheck != config.AppCheckOff {
			s.edge.AppCheck = &httpapi.AppCheck{Monitor: s.cfg.AppCheck == config.AppCheckMonitor, Consume: consume, Accounts: s.cfg.AppCheckAccounts}
		}
		s.routes = map[string]http.HandlerFunc{}
		for _, spec := range Catalog {
			h := s.handler(spec)
			if telemetry.Enabled(s.getenv) {
				// The request's span, continuing the caller's trace, and
				// the standard HTTP server metric.
				h = telemetry.Serve(spec.Name, h)
			}
			s.routes[spec.Name] = h
		}
	})
}

// needsPageTokenKey refuses a deployed function that signs page tokens
// without PAGE_TOKEN_SECRET: anyone could forge them. The buildpack runs
// each deployed function with FUNCTION_TARGET, its entry point.
func (s *Server) needsPageTokenKey() error {
	if !s.cfg.Deployed || s.cfg.PageTokenSecret != "" {
		return nil
	}
	for _, spec := range Catalog {
		if spec.Name == s.getenv("FUNCTION_TARGET") && spec.SignsPageTokens {
			return fmt.Errorf("PAGE_TOKEN_SECRET: is required by %s when deployed: without it page tokens could be forged (scripts/deploy.sh passes it from Secret Manager)", spec.Name)
		}
	}
	return nil
}

// consumedBy checks APP_CHECK_CONSUME: public functions of the catalog.
func consumedBy(names []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		if !slices.ContainsFunc(Catalog, func(s Spec) bool { return s.Name == n && s.Access == Public }) {
			return nil, fmt.Errorf("APP_CHECK_CONSUME: %q is not a public function", n)
		}
		out[n] = true
	}
	return out, nil
}

// StartupError returns the settings a deployed function refuses, already
// logged. Locally, where the settings are read on the first request, it is
// nil.
func (s *Server) StartupError() error {
	if s.getenv("K_SERVICE") == "" {
		return nil
	}
	return s.cfgErr
}

// Handler returns the handler of the function name.
func (s *Server) Handler(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.setup()
		s.routes[name](w, r)
	}
}

// EmulatorRoute serves /{project}/{region}/{name}, the URL
// connectFunctionsEmulator makes the Firebase SDKs call, with the function
// named in it. Deployed functions are called at their own URL instead.
func (s *Server) EmulatorRoute(w http.ResponseWriter, r *http.Request) {
	s.setup()
	h := s.routes[r.PathValue("name")]
	if h == nil {
		httpapi.WriteError(w, errs.New(errs.NotFound, "no function %q", r.PathValue("name")))
		return
	}
	h(w, r)
}

func (s *Server) handler(spec Spec) http.HandlerFunc {
	if spec.Kind == FirestoreTrigger {
		return s.eventHandler(spec)
	}
	ep := httpapi.Endpoint{Name: spec.Name, Method: spec.Method, Public: spec.Access == Public, MaxBody: spec.MaxBody}
	if spec.LongRunning {
		ep.Deadline = s.cfg.ReconcileWork()
	}
	return s.edge.Handler(ep)
}

// The Server is the edge's backend (httpapi.Backend): what it checks
// callers with, and the functions, each built on first use.

// Authenticator returns the checker of ID tokens.
func (s *Server) Authenticator() (httpapi.Authenticator, error) {
	a, err := s.get()
	if err != nil {
		return nil, err
	}
	return a.authenticate, nil
}

// AppVerifier returns the checker of App Check tokens.
func (s *Server) AppVerifier(ctx context.Context) (httpapi.AppVerifier, error) {
	a, err := s.get()
	if err != nil {
		return nil, err
	}
	return a.appVerifier(ctx)
}

// Admit spends an end user's budget for a call.
func (s *Server) Admit(ctx context.Context, req *httpapi.Request) error {
	a, err := s.get()
	if err != nil {
		return err
	}
	return a.core.Admit(ctx, callerOf(req))
}

// Handle serves the function req.Function.
func (s *Server) Handle(ctx context.Context, req *httpapi.Request) (int, any, error) {
	a, err := s.get()
	if err != nil {
		return 0, nil, err
	}
	return specs[req.Function].http.handle(a, ctx, req)
}

// get returns the app, building it on first use.
func (s *Server) get() (*app, error) {
	s.setup()
	if s.cfgErr != nil {
		return nil, errs.Retryable(s.cfgErr, 10*time.Second, "the function is misconfigured; see its logs")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app != nil {
		return s.app, nil
	}
	a, err := newApp(context.Background(), s.cfg, s.deps, s.log)
	if err != nil {
		s.log.Error("cannot reach Firestore or Firebase Auth", "error", err.Error())
		return nil, errs.Retryable(err, time.Second, "the function cannot start yet; see its logs, and retry")
	}
	s.app = a
	return a, nil
}

// Stats is what the function server counts, for load tests (served at
// /debug/shardcount locally).
type Stats struct {
	// Firestore operations by label: increment, rollup, reconcile, other.
	Firestore    map[string]firestoredb.OpCounts `json:"firestore"`
	RollupEvents int64                           `json:"rollup_events"`
	// RSSBytes is the process's resident memory (Linux), for soak tests.
	RSSBytes int64 `json:"rss_bytes"`
	// CPUSeconds is the CPU time the process has used (user and system),
	// for what a feature costs per request.
	CPUSeconds float64 `json:"cpu_seconds"`
	// UnbudgetedReads are reads no caller's budget paid for: always 0
	// (internal/ledger).
	UnbudgetedReads int64 `json:"unbudgeted_reads"`
	// AppCheck counts the outcomes of App Check checks.
	AppCheck map[string]int64 `json:"app_check,omitempty"`
}

// Stats returns the counts so far (zero before the first request).
func (s *Server) Stats() Stats {
	st := Stats{RSSBytes: rss(), CPUSeconds: cpuSeconds(), UnbudgetedReads: ledger.Unbudgeted()}
	if s.edge != nil && s.edge.AppCheck != nil {
		st.AppCheck = s.edge.AppCheck.Outcomes()
	}
	s.mu.Lock()
	a := s.app
	s.mu.Unlock()
	if a != nil {
		st.Firestore, st.RollupEvents = a.db.Stats(), a.rollupEvents.Load()
	}
	return st
}

// StatsHandler serves Stats as JSON: what load tests read to report
// commits per increment. It is served locally only (cmd/devserver, and the
// functions-framework server when no FUNCTION_TARGET is set).
func (s *Server) StatsHandler(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, s.Stats())
}

// Close releases the clients the server built (the simulation closes its
// instances' at the end of a run).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app == nil {
		return nil
	}
	return s.app.db.Close()
}

package functions

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/shardcount/shardcount/internal/auth"
	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/ratelimit"
	"github.com/shardcount/shardcount/internal/rollup"
)

// Server serves the functions of Catalog. Its dependencies are built on the
// first request, so registering it in init never fails: a configuration or
// connection error answers 503 and is logged, and the next request retries.
type Server struct {
	getenv func(string) string

	mu  sync.Mutex
	app *app
}

// FromEnv returns a Server configured from the process environment.
func FromEnv() *Server { return &Server{getenv: os.Getenv} }

// app is everything a request needs, built once.
type app struct {
	cfg         config.Config
	log         *slog.Logger
	db          *firestoredb.DB
	counters    *firestoredb.Counters
	roller      *rollup.Roller
	instruments *instruments.Store
	limiter     *ratelimit.Limiter
	http        map[string]http.HandlerFunc
	events      map[string]func(context.Context, cloudevents.Event) error
}

func (s *Server) get() (*app, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app != nil {
		return s.app, nil
	}
	a, err := newApp(context.Background(), s.getenv)
	if err != nil {
		return nil, err
	}
	s.app = a
	return a, nil
}

func newApp(ctx context.Context, getenv func(string) string) (*app, error) {
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	log := logging.New(os.Stdout, cfg.LogLevel)
	if cfg.Auth == config.AuthOff {
		log.Warn("AUTH=off: every HTTP function accepts anonymous calls; use this for local demos only")
	}
	db, err := firestoredb.Open(ctx, cfg.ProjectID, cfg.EmulatorHost)
	if err != nil {
		return nil, err
	}
	a := &app{
		cfg:      cfg,
		log:      log,
		db:       db,
		counters: firestoredb.NewCounters(db),
	}
	a.roller = rollup.New(a.counters, cfg.RollupCadence, log)
	secret := cfg.PageTokenSecret
	if secret == "" {
		secret = "shardcount page tokens of " + db.ProjectID()
	}
	a.instruments = instruments.NewStore(db.Client, cfg.InstrumentShards, []byte(secret))
	a.limiter = ratelimit.New(cfg.IncrementRate, cfg.IncrementBurst)
	edge := &httpapi.Edge{Logger: log, ProjectID: db.ProjectID(), Origins: cfg.CORSOrigins}
	if cfg.Auth == config.AuthRequired {
		v, err := auth.New(ctx, db.ProjectID())
		if err != nil {
			db.Close()
			return nil, err
		}
		edge.Authenticate = v.Authenticate
	}
	handles := map[string]httpapi.Handle{
		"createCounter":     a.createCounter,
		"incrementCounter":  a.incrementCounter,
		"getCounter":        a.getCounter,
		"reconcileCounters": a.reconcileCounters,
		"recordInstruments": a.recordInstruments,
		"queryInstruments":  a.queryInstruments,
	}
	a.events = map[string]func(context.Context, cloudevents.Event) error{
		"rollupCounter": a.rollupCounter,
	}
	a.http = map[string]http.HandlerFunc{}
	for _, spec := range Catalog {
		if spec.Kind == FirestoreTrigger {
			if a.events[spec.Name] == nil {
				return nil, fmt.Errorf("functions: no handler for %s", spec.Name)
			}
			continue
		}
		h, ok := handles[spec.Name]
		if !ok {
			return nil, fmt.Errorf("functions: no handler for %s", spec.Name)
		}
		a.http[spec.Name] = edge.Handler(httpapi.Endpoint{Name: spec.Name, Method: spec.Method, Public: spec.Access == Public, Handle: h})
	}
	return a, nil
}

// HTTP returns the handler of the HTTP function name.
func (s *Server) HTTP(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := s.get()
		if err != nil {
			logging.New(os.Stdout, slog.LevelInfo).Error("function unavailable", "function", name, "error", err.Error())
			e := errs.Wrap(errs.Unavailable, err, "the function is misconfigured or cannot reach Firestore; see its logs")
			httpapi.WriteError(w, e)
			return
		}
		a.http[name](w, r)
	}
}

// Event returns the handler of the CloudEvent function name. A failure to
// build the dependencies is returned, so Eventarc retries the event later.
func (s *Server) Event(name string) func(context.Context, cloudevents.Event) error {
	return func(ctx context.Context, e cloudevents.Event) error {
		a, err := s.get()
		if err != nil {
			logging.New(os.Stdout, slog.LevelInfo).Error("function unavailable", "function", name, "error", err.Error())
			return err
		}
		return a.events[name](ctx, e)
	}
}

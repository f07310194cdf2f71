package service

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/shardcount/shardcount/internal/auth"
	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/core"
	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/reconcile"
	"github.com/shardcount/shardcount/internal/store/appstore"
	"github.com/shardcount/shardcount/internal/store/counterstore"
	"github.com/shardcount/shardcount/internal/store/incrementstore"
	"github.com/shardcount/shardcount/internal/store/instrumentstore"
	"github.com/shardcount/shardcount/internal/store/memberstore"
	"github.com/shardcount/shardcount/internal/store/rollupstore"
	"github.com/shardcount/shardcount/internal/store/shared"
	"github.com/shardcount/shardcount/internal/store/windowstore"
	"github.com/shardcount/shardcount/internal/telemetry"
)

// reconcileStores are what the roll-up and reconcile read and write
// (reconcile.Store): the counter documents, their members, and the
// roll-up's own documents.
type reconcileStores struct {
	*counterStore
	*memberStore
	*rollupStore
}

type (
	counterStore = counterstore.Store
	memberStore  = memberstore.Store
	rollupStore  = rollupstore.Store
)

func newApp(ctx context.Context, cfg config.Config, deps Deps, log *slog.Logger) (*app, error) {
	if cfg.Auth == config.AuthOff {
		log.Warn("AUTH=off: every HTTP function accepts anonymous calls; use this for local demos only")
	}
	var db *firestoredb.DB
	var err error
	if deps.Firestore != nil {
		db, err = firestoredb.OnAPI(deps.Firestore, cfg.ProjectID, cfg.Database)
	} else {
		db, err = firestoredb.Open(ctx, cfg.ProjectID, cfg.Database, cfg.EmulatorHost)
	}
	if err != nil {
		return nil, err
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	base := shared.New(db, shared.Options{Now: deps.Now, IntN: deps.IntN, ActivityShards: cfg.ActivityShards})
	counters := counterstore.New(base, counterstore.Options{ShardCountCache: cfg.ShardCountCache, Kinds: cfg.Kinds, Calendar: cfg.Calendar})
	members := memberstore.New(base)
	secret := cfg.PageTokenSecret
	if secret == "" {
		secret = localPageTokenKey // config refuses an empty key when deployed
	}
	a := &app{
		cfg: cfg,
		db:  db,
		core: core.New(cfg, core.Stores{
			Counters: counters,
			Members:  members,
			Apps:     appstore.New(base),
			Increments: incrementstore.New(base, counters, incrementstore.Options{ShardCountCache: cfg.ShardCountCache,
				SlowCommit: cfg.AutoShardingSlowCommit, ActivityEvery: cfg.ActivityEvery(), Windows: cfg.Windows, Calendar: cfg.Calendar}),
			Windows:           windowstore.New(db, cfg.Calendar),
			Instruments:       instrumentstore.New(db, cfg.InstrumentShards, []byte(secret)),
			ReadsPerIncrement: incrementstore.MaxReadsPerOp,
			ReadsPerReset:     incrementstore.ResetReads,
			ReadsPerQuery:     instrumentstore.QueryReads,
		}, core.Options{Now: deps.Now, Metrics: telemetry.Increments{}}),
		reconciler: reconcile.New(cfg, reconcileStores{counters, members,
			rollupstore.New(base, rollupstore.Options{Windows: cfg.Windows, Calendar: cfg.Calendar, Settle: cfg.FirestoreDeadline + time.Second, Remember: counters.Remember})}, deps.Now),
	}
	if deps.Authenticate != nil {
		a.authenticate = deps.Authenticate
		return a, nil
	}
	v, err := auth.New(ctx, db.ProjectID())
	switch {
	case err == nil:
		a.authenticate = v.Authenticate
	case cfg.Auth == config.AuthOff:
		// Only the tokens callers choose to send need it (unique counters).
		log.Warn("AUTH=off: ID tokens cannot be checked here; requests that send one answer 503", "error", err.Error())
		a.authenticate = func(context.Context, *http.Request) (httpapi.Caller, error) {
			return httpapi.Caller{}, errs.Retryable(err, 10*time.Second, "this function cannot check ID tokens; see its logs")
		}
	default:
		db.Close()
		return nil, err
	}
	return a, nil
}

// appVerifier returns the App Check verifier, building it on first use:
// it fetches App Check's public keys, within FIRESTORE_DEADLINE; a
// failure answers 503 and the next request tries again.
func (a *app) appVerifier(ctx context.Context) (httpapi.AppVerifier, error) {
	a.appsMu.Lock()
	if a.apps != nil {
		defer a.appsMu.Unlock()
		return a.apps, nil
	}
	if a.appsBuild == nil {
		if time.Since(a.appsFailedAt) < time.Second {
			defer a.appsMu.Unlock()
			return nil, a.appsErr // a failed fetch is tried again a second later, not per request
		}
		a.appsBuild = make(chan struct{})
		go a.buildAppVerifier(a.appsBuild)
	}
	built := a.appsBuild
	a.appsMu.Unlock()
	select {
	case <-built:
	case <-ctx.Done():
		return nil, errs.Retryable(ctx.Err(), time.Second, "cannot check App Check tokens right now; retry shortly")
	}
	a.appsMu.Lock()
	defer a.appsMu.Unlock()
	if a.apps == nil {
		return nil, a.appsErr
	}
	return a.apps, nil
}

// buildAppVerifier fetches App Check's keys once for every request that
// waits (each within its own deadline), and keeps the verifier, or the
// error, when it is done.
func (a *app) buildAppVerifier(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), appVerifierFetch)
	defer cancel()
	apps, err := auth.NewApps(ctx, a.db.ProjectID(), auth.AppsOptions{JWKSURL: a.cfg.AppCheckJWKS, APIURL: a.cfg.AppCheckAPI})
	a.appsMu.Lock()
	defer a.appsMu.Unlock()
	if err != nil {
		a.appsErr, a.appsFailedAt = errs.Retryable(err, time.Second, "cannot check App Check tokens right now; retry shortly"), time.Now()
	}
	a.apps, a.appsBuild = apps, nil
	close(done)
}

// appVerifierFetch bounds one fetch of App Check's public keys.
const appVerifierFetch = 10 * time.Second

// localPageTokenKey signs page tokens on the emulators only.
const localPageTokenKey = "shardcount local development page-token key"

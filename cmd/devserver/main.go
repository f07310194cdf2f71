// Command devserver runs every function of the project in one local
// process, each at /<name> as functions-framework serves them when no
// FUNCTION_TARGET is set, plus /{project}/{region}/<name> for the Firebase
// SDKs' connectFunctionsEmulator. scripts/dev.sh starts it next to the
// emulators; configure it with the same environment variables as the
// deployed functions (docs/reference/settings.md).
//
// It serves the same handlers functions-framework serves when deployed
// (service.Server), from an http.Server of its own: funcframework.Start
// listens with http.ListenAndServe, which has no read, header or idle
// timeouts, so one slow client could hold a connection forever.
//
// With -trigger-port, it also receives the Firestore emulator's trigger
// events there (start the emulator with
// --functions_emulator=127.0.0.1:<trigger-port>), registers the project's
// Firestore triggers with the emulator, and hands each event to its
// function the way Eventarc does (internal/localdev/triggerbridge).
//
// With -reconcile-every, it calls reconcileCounters on that schedule, as
// Cloud Scheduler does when deployed (scripts/dev.sh: every minute).
//
// With APP_CHECK on, it stands in for Google's App Check service at
// /debug/appcheck/ (internal/localdev/appcheckdev).
//
// With -settings FILE -print-env, it checks an app's settings file
// (shardcount.env.yaml) against its environment, as scripts/deploy.sh
// does, and prints the file's settings as bash export lines for
// scripts/dev.sh to run the functions with.
//
// /debug/shardcount serves what the functions counted (Firestore commits,
// writes and reads by label, roll-up events), which loadgen reads.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/config"
	"github.com/shardcount/shardcount/internal/localdev/appcheckdev"
	"github.com/shardcount/shardcount/internal/localdev/otlpsink"
	"github.com/shardcount/shardcount/internal/localdev/triggerbridge"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/service"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.String("port", cmp.Or(os.Getenv("FUNCTIONS_PORT"), "8081"), "port of the functions")
	triggerPort := flag.String("trigger-port", os.Getenv("TRIGGER_PORT"), "port receiving the Firestore emulator's trigger events (empty: none)")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address, for profiling under load (empty: off)")
	reconcileEvery := flag.Duration("reconcile-every", 0, "call reconcileCounters this often, as Cloud Scheduler does when deployed (0: never)")
	routes := map[string][]string{}
	flag.Func("route", "with -trigger-port: PROJECT=URL[,URL…] also registers PROJECT's triggers and delivers its events to those function servers, at random (repeatable; benchmarks use it)", func(v string) error {
		project, urls, ok := strings.Cut(v, "=")
		if !ok || project == "" || urls == "" {
			return errors.New("want PROJECT=URL[,URL…]")
		}
		routes[project] = strings.Split(urls, ",")
		return nil
	})
	list := flag.Bool("list", false, "print the names of the HTTP functions, and exit")
	appFunctions := flag.String("app-functions", "", "with -trigger-port: the base URL of an app's own Functions emulator (the Firebase CLI's): its Firestore triggers are registered with the emulator, and their events go there")
	appConfig := flag.String("app-config", "", "write to -app-config-dir a firebase.json that runs the functions of this app directory in the Firebase CLI's Functions emulator on -app-port (and the four ports after), and exit")
	appConfigDir := flag.String("app-config-dir", "", "with -app-config: where to write it")
	appPort := flag.Int("app-port", 5001, "with -app-config: the Functions emulator's port")
	settings := flag.String("settings", "", "with -print-env: the app's settings file ("+config.FileName+")")
	printEnv := flag.Bool("print-env", false, "check -settings against this environment, print its settings as bash export lines, and exit")
	flag.Parse()
	if *appConfig != "" {
		b, err := triggerbridge.AppConfig(*appConfig, *appConfigDir, *appPort)
		if err == nil {
			err = os.WriteFile(filepath.Join(*appConfigDir, "firebase.json"), append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "dev.sh:", err)
			os.Exit(2)
		}
		return
	}
	if *printEnv {
		if err := exportSettings(os.Stdout, *settings, os.Getenv); err != nil {
			fmt.Fprintln(os.Stderr, "dev.sh:", err)
			os.Exit(2)
		}
		return
	}
	if *list {
		for _, spec := range service.Catalog {
			if spec.Kind == service.HTTPTrigger {
				fmt.Println(spec.Name)
			}
		}
		return
	}

	mux := http.NewServeMux()
	if err := standInForAppCheck(mux, net.JoinHostPort(*host, *port)); err != nil {
		log.Fatalf("devserver: %v", err)
	}
	s := service.New(os.Getenv)
	for _, spec := range service.Catalog {
		mux.Handle("/"+spec.Name, s.Handler(spec.Name))
	}
	mux.HandleFunc("/{project}/{region}/{name}", s.EmulatorRoute)
	mux.HandleFunc("/debug/shardcount", s.StatsHandler)
	// A local OTLP receiver: scripts/dev.sh points OTEL_EXPORTER_OTLP_ENDPOINT
	// here, and the web app's metrics page reads /debug/telemetry.
	sink := &otlpsink.Sink{}
	mux.Handle("POST /v1/traces", sink)
	mux.Handle("POST /v1/metrics", sink)
	mux.HandleFunc("/debug/telemetry", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"at": time.Now(), "metrics": sink.Metrics()})
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("shardcount functions\n")) })

	if *pprofAddr != "" {
		pm := http.NewServeMux()
		pm.HandleFunc("/debug/pprof/", pprof.Index)
		pm.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go func() { log.Fatal(listen(*pprofAddr, pm)) }()
	}
	if *reconcileEvery > 0 {
		go schedule(context.Background(), "http://"+net.JoinHostPort(*host, *port)+"/reconcileCounters", *reconcileEvery, logging.New(logging.Stdout, nil))
	}
	if *triggerPort != "" {
		app, err := serveTriggers(*host, *port, *triggerPort, *appFunctions, routes)
		if err != nil {
			log.Fatalf("devserver: %v", err)
		}
		// Whether the app's functions are wired yet: dev.sh waits for it.
		mux.HandleFunc("/debug/app-functions", func(w http.ResponseWriter, r *http.Request) {
			if app == nil {
				http.NotFound(w, r)
				return
			}
			select {
			case <-app.Ready():
			default:
				http.Error(w, "registering the app's triggers", http.StatusServiceUnavailable)
				return
			}
			registered, skipped := app.State()
			json.NewEncoder(w).Encode(map[string]any{"registered": registered, "skipped": skipped})
		})
	}
	log.Fatalf("devserver: %v", listen(net.JoinHostPort(*host, *port), mux))
}

// standInForAppCheck serves a local App Check service under
// /debug/appcheck/ when APP_CHECK is on and nothing else stands in for
// Google's (which cannot be reached locally): the functions verify tokens
// against its key and consume limited-use ones through it, and the web app
// gets its tokens from /debug/appcheck/token.
func standInForAppCheck(mux *http.ServeMux, addr string) error {
	if m := strings.ToLower(os.Getenv("APP_CHECK")); m == "" || m == "off" || os.Getenv("APP_CHECK_JWKS_URL") != "" {
		return nil
	}
	svc, err := appcheckdev.New(os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if err != nil {
		return err
	}
	svc.Register(mux, "/debug/appcheck")
	os.Setenv("APP_CHECK_JWKS_URL", "http://"+addr+"/debug/appcheck/jwks")
	os.Setenv("APP_CHECK_API_URL", "http://"+addr+"/debug/appcheck/")
	log.Printf("devserver: App Check tokens are minted and checked locally (/debug/appcheck/)")
	return nil
}

// timeouts bound what a client can hold a connection for: the functions
// answer within FIRESTORE_DEADLINE, and the roll-up within a few cadences.
type timeouts struct{ header, read, write, idle time.Duration }

var serving = timeouts{header: 5 * time.Second, read: 30 * time.Second, write: 2 * time.Minute, idle: 2 * time.Minute}

// server serves h on addr with the timeouts.
func server(addr string, h http.Handler, t timeouts) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: t.header, ReadTimeout: t.read, WriteTimeout: t.write, IdleTimeout: t.idle}
}

func listen(addr string, h http.Handler) error { return server(addr, h, serving).ListenAndServe() }

func serveTriggers(host, port, triggerPort, app string, routes map[string][]string) (*triggerbridge.App, error) {
	emulator, project := os.Getenv("FIRESTORE_EMULATOR_HOST"), os.Getenv("GOOGLE_CLOUD_PROJECT")
	database := cmp.Or(os.Getenv("FIRESTORE_DATABASE"), "(default)")
	if emulator == "" || project == "" {
		return nil, errors.New("-trigger-port needs FIRESTORE_EMULATOR_HOST and GOOGLE_CLOUD_PROJECT")
	}
	logger := logging.New(logging.Stdout, nil)
	bridge := &triggerbridge.Bridge{Target: "http://" + net.JoinHostPort(host, port), Routes: routes, App: app, Log: logger}
	var watched *triggerbridge.App
	if app != "" {
		watched = triggerbridge.WatchApp(context.Background(), app, emulator, project, 30*time.Second, logger)
	}
	go func() { log.Fatal(listen(net.JoinHostPort(host, triggerPort), bridge)) }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	projects := slices.Compact(slices.Sorted(maps.Keys(routes)))
	if !slices.Contains(projects, project) {
		projects = append(projects, project)
	}
	for _, p := range projects {
		if err := triggerbridge.RegisterAll(ctx, emulator, p, database); err != nil {
			return nil, err
		}
	}
	log.Printf("devserver: trigger events of the emulator reach the functions through 127.0.0.1:%s", triggerPort)
	return watched, nil
}

// schedule POSTs {} to url every interval, like the Cloud Scheduler job of
// a deployment calls reconcileCounters: it finishes the merges of quiet
// counters, heals roll-ups whose last event was lost and purges deleted
// counters.
func schedule(ctx context.Context, url string, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Warn("scheduled reconcile failed", "error", err.Error())
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Warn("scheduled reconcile failed", "status", resp.StatusCode)
		}
	}
}

// exportSettings prints the settings of the file at path as bash export
// lines, once none of them is set otherwise in getenv (the shell); the
// shell's settings the file leaves out are added, and named.
func exportSettings(w io.Writer, path string, getenv func(string) string) error {
	f, err := config.ReadFile(path)
	if err != nil {
		return err
	}
	if conflicts := f.Conflicts(getenv, false); len(conflicts) > 0 {
		return errors.Join(conflicts...)
	}
	if added := f.Added(getenv); len(added) > 0 {
		fmt.Fprintf(os.Stderr, "dev.sh: from this shell, besides %s: %s\n", path, strings.Join(added, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Values)) {
		fmt.Fprintf(w, "export %s='%s'\n", k, strings.ReplaceAll(f.Values[k], "'", `'\''`))
	}
	return nil
}

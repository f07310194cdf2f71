package triggerbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// An app's own Firestore-triggered functions (Node, the Firebase Functions
// SDK) run in the Firebase CLI's Functions emulator. That emulator
// registers their triggers only with a Firestore emulator the same CLI
// started (firebase-tools' functionsEmulator addFirestoreTrigger: "function
// ignored because the firestore emulator does not exist or is not
// running"), and shardcount runs its own. So WatchApp reads the app's
// triggers from the CLI's emulator and registers them with shardcount's,
// under the key the CLI serves them at; the Bridge sends their events
// there.

// backends is what the Functions emulator's /backends lists: each
// function's definition.
type backends struct {
	Backends []struct {
		FunctionTriggers []struct {
			ID           string `json:"id"`
			EventTrigger *struct {
				EventType               string            `json:"eventType"`
				EventFilters            map[string]string `json:"eventFilters"`
				EventFilterPathPatterns map[string]string `json:"eventFilterPathPatterns"`
				Channel                 string            `json:"channel"`
			} `json:"eventTrigger"`
		} `json:"functionTriggers"`
	} `json:"backends"`
}

// appTriggers returns the Firestore triggers the Functions emulator at
// functionsURL serves, keyed as it serves them: "{id}-{generation}", the
// generation 0 until something calls its enableBackgroundTriggers; and
// the event-triggered functions it cannot bridge (of the v1 SDK, or of
// other services).
func appTriggers(ctx context.Context, functionsURL string) ([]Trigger, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(functionsURL, "/")+"/backends", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s/backends: %s", functionsURL, resp.Status)
	}
	var b backends
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		return nil, nil, err
	}
	var out []Trigger
	var skipped []string
	for _, be := range b.Backends {
		for _, f := range be.FunctionTriggers {
			e := f.EventTrigger
			if e == nil {
				continue // an HTTP or callable function: nothing to bridge
			}
			if !strings.HasPrefix(e.EventType, "google.cloud.firestore.document.v1.") {
				skipped = append(skipped, f.ID+" ("+e.EventType+")")
				continue
			}
			doc := e.EventFilterPathPatterns["document"]
			if doc == "" {
				doc = e.EventFilters["document"]
			}
			key := f.ID + "-0"
			if e.Channel != "" {
				key += "-" + e.Channel
			}
			out = append(out, Trigger{Function: key, EventType: e.EventType, Document: doc, Database: e.EventFilters["database"]})
		}
	}
	return out, skipped, nil
}

// App is the app's own Functions emulator as the bridge sees it: the
// triggers registered, those it cannot bridge, and whether the first
// registration is done (Ready).
type App struct {
	mu         sync.Mutex
	registered []Trigger
	skipped    []string
	ready      chan struct{}
}

// Ready is closed once the first registration is done: the triggers the
// emulator listed within its loading time are registered.
func (a *App) Ready() <-chan struct{} { return a.ready }

// State reports the triggers registered and those skipped.
func (a *App) State() (registered []Trigger, skipped []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.registered), slices.Clone(a.skipped)
}

// WatchApp registers, with the Firestore emulator at emulatorHost, the
// Firestore triggers of the app's Functions emulator at functionsURL: it
// waits up to loading for the emulator to list a function (it loads them
// after it answers), registers what it lists, and is Ready; it goes on
// registering those that appear (a reload adds some) until ctx ends.
func WatchApp(ctx context.Context, functionsURL, emulatorHost, project string, loading time.Duration, log *slog.Logger) *App {
	a := &App{ready: make(chan struct{})}
	done := map[Trigger]bool{}
	register := func() bool {
		triggers, skipped, err := appTriggers(ctx, functionsURL)
		for _, t := range triggers {
			if done[t] {
				continue
			}
			if err := Register(ctx, emulatorHost, project, t); err != nil {
				log.Warn("cannot register an app's trigger with the Firestore emulator", "trigger", t.Function, "error", err.Error())
				continue
			}
			done[t] = true
			a.mu.Lock()
			a.registered = append(a.registered, t)
			a.mu.Unlock()
			log.Info("an app's function receives the emulator's writes", "trigger", t.Function, "document", t.Document, "event", t.EventType)
		}
		a.mu.Lock()
		a.skipped = skipped
		a.mu.Unlock()
		return err == nil && len(triggers)+len(skipped) > 0
	}
	go func() {
		for deadline := time.Now().Add(loading); !register() && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		registered, skipped := a.State()
		if len(registered) == 0 {
			log.Warn("the app's Functions emulator serves no Firestore trigger of the v2 SDK (firebase-functions/v2/firestore) to bridge", "skipped", skipped)
		}
		for _, s := range skipped {
			log.Warn("an app's function is not bridged: only Firestore triggers of the v2 SDK are", "function", s)
		}
		close(a.ready)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				register()
			}
		}
	}()
	return a
}

// AppConfig is a firebase.json, to be written in configDir, for the
// Firebase CLI to run the functions of the app in appDir (as its
// firebase.json declares them, their sources relative to configDir: the
// CLI joins even an absolute path to its project directory) in a
// Functions emulator on port, with the emulators it starts beside it on
// the four ports after, and nothing else.
func AppConfig(appDir, configDir string, port int) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(appDir, "firebase.json"))
	if err != nil {
		return nil, err
	}
	var app struct {
		Functions json.RawMessage `json:"functions"`
	}
	if err := json.Unmarshal(b, &app); err != nil {
		return nil, fmt.Errorf("%s/firebase.json: %w", appDir, err)
	}
	var codebases []map[string]any
	switch f := bytes.TrimSpace(app.Functions); {
	case len(f) == 0 || string(f) == "null":
		codebases = []map[string]any{{"source": "functions"}} // the CLI's default
	case f[0] == '[':
		err = json.Unmarshal(f, &codebases)
	default:
		var one map[string]any
		err = json.Unmarshal(f, &one)
		codebases = []map[string]any{one}
	}
	if err != nil {
		return nil, fmt.Errorf("%s/firebase.json: its \"functions\": %w", appDir, err)
	}
	for _, c := range codebases {
		src, _ := c["source"].(string)
		if src == "" {
			src = "functions"
		}
		if c["source"], err = filepath.Rel(configDir, filepath.Join(appDir, src)); err != nil {
			return nil, err
		}
		delete(c, "predeploy") // deploy hooks: the emulator runs none
	}
	host := func(p int) map[string]any { return map[string]any{"host": "127.0.0.1", "port": p} }
	return json.MarshalIndent(map[string]any{
		"functions": codebases,
		"emulators": map[string]any{
			"functions": host(port), "hub": host(port + 1), "logging": host(port + 2), "eventarc": host(port + 3), "tasks": host(port + 4),
			"ui": map[string]any{"enabled": false}, "singleProjectMode": true,
		},
	}, "", "  ")
}

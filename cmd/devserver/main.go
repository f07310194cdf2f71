// Command devserver runs every function of the project in one process, the
// way functions-framework runs them when no FUNCTION_TARGET is set: each
// function is served at /<name>. scripts/dev.sh starts it next to the
// Firestore emulator; configure it with the same environment variables as
// the deployed functions (README "Settings").
//
// With -trigger-port, it also receives the emulator's trigger events there
// (start the emulator with --functions_emulator=127.0.0.1:<trigger-port>),
// registers the project's Firestore triggers with the emulator, and hands
// each event to its function in the form Eventarc uses.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/shardcount/shardcount" // registers the functions
	"github.com/shardcount/shardcount/functions"
	"github.com/shardcount/shardcount/internal/eventbridge"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.String("port", cmp.Or(os.Getenv("FUNCTIONS_PORT"), "8081"), "port of the functions")
	triggerPort := flag.String("trigger-port", os.Getenv("TRIGGER_PORT"), "port receiving the Firestore emulator's trigger events (empty: none)")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address, for profiling under load (empty: off)")
	flag.Parse()

	if *pprofAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go func() { log.Fatal(http.ListenAndServe(*pprofAddr, mux)) }()
	}

	if *triggerPort != "" {
		if err := serveTriggers(*host, *port, *triggerPort); err != nil {
			log.Fatalf("devserver: %v", err)
		}
	}
	if err := funcframework.StartHostPort(*host, *port); err != nil {
		log.Fatalf("devserver: %v", err)
	}
}

func serveTriggers(host, port, triggerPort string) error {
	emulator, project := os.Getenv("FIRESTORE_EMULATOR_HOST"), os.Getenv("GOOGLE_CLOUD_PROJECT")
	if emulator == "" || project == "" {
		return errors.New("-trigger-port needs FIRESTORE_EMULATOR_HOST and GOOGLE_CLOUD_PROJECT")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, triggerPort))
	if err != nil {
		return err
	}
	bridge := &eventbridge.Bridge{Target: "http://" + net.JoinHostPort(host, port)}
	go func() { log.Fatal(http.Serve(l, bridge)) }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, spec := range functions.Catalog {
		if spec.Kind != functions.FirestoreTrigger {
			continue
		}
		t := eventbridge.Trigger{Function: spec.Name, EventType: spec.EventType, Document: spec.Document}
		if err := eventbridge.Register(ctx, emulator, project, t); err != nil {
			return err
		}
		log.Printf("devserver: %s receives %s on %s", spec.Name, spec.EventType, spec.Document)
	}
	return nil
}

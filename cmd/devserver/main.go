// Command devserver runs every function of the project in one process, the
// way functions-framework runs them when no FUNCTION_TARGET is set: each
// function is served at /<name>. scripts/dev.sh starts it next to the
// Firestore emulator; configure it with the same environment variables as
// the deployed functions (README "Settings").
package main

import (
	"flag"
	"log"
	"os"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/shardcount/shardcount" // registers the functions
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.String("port", envOr("FUNCTIONS_PORT", "8081"), "port of the functions")
	flag.Parse()

	if err := funcframework.StartHostPort(*host, *port); err != nil {
		log.Fatalf("devserver: %v", err)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Package shardcount is the source the Cloud Functions Go buildpack builds
// (`gcloud functions deploy --source=.`): it registers every function of
// service.Catalog with functions-framework and does nothing else.
//
// Every function is registered with functions.HTTP, rollupCounter too: it
// decodes its CloudEvent from each request itself, because the CloudEvent
// receiver of functions-framework-go v1.9.2 serializes requests through one
// channel and can wedge an instance
// (https://github.com/cloudevents/sdk-go/issues/1224; service.Server's
// eventHandler says more). Eventarc posts the same binary-mode CloudEvent
// either way, so `gcloud functions deploy --trigger-event-filters` deploys it
// unchanged.
//
// Deploy one function per entry point with scripts/deploy.sh; run them all
// locally with scripts/dev.sh.
package shardcount

import (
	"context"
	"os"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	framework "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/shardcount/shardcount/internal/service"
)

func init() {
	s := service.New(os.Getenv)
	if s.StartupError() != nil {
		// Deployed with a setting it refuses (logged): exit, so the deploy
		// fails and Cloud Run keeps serving the previous revision, instead
		// of a revision that answers 503 to everything.
		os.Exit(1)
	}
	for _, spec := range service.Catalog {
		framework.HTTP(spec.Name, s.Handler(spec.Name))
	}
	// Served only when every function is (no FUNCTION_TARGET, i.e. locally):
	// the path the Firebase SDKs call after connectFunctionsEmulator, and
	// the counts load tests read.
	funcframework.RegisterHTTPFunctionContext(context.Background(), "/{project}/{region}/{name}", s.EmulatorRoute)
	funcframework.RegisterHTTPFunctionContext(context.Background(), "/debug/shardcount", s.StatsHandler)
}

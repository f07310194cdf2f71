// Package shardcount is the source the Cloud Functions Go buildpack builds
// (`gcloud functions deploy --source=.`): it registers every function of
// functions.Catalog with functions-framework and does nothing else.
//
// Deploy one function per entry point with scripts/deploy.sh; run them all
// locally with scripts/dev.sh.
package shardcount

import (
	framework "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/shardcount/shardcount/functions"
)

func init() {
	s := functions.FromEnv()
	for _, spec := range functions.Catalog {
		switch spec.Kind {
		case functions.HTTPTrigger:
			framework.HTTP(spec.Name, s.HTTP(spec.Name))
		case functions.FirestoreTrigger:
			framework.CloudEvent(spec.Name, s.Event(spec.Name))
		}
	}
}

// Command deployplan prints, as a bash script, every command that deploys
// the project to Google Cloud: one `gcloud functions deploy` per function
// chosen from service.Catalog (all of them, or the groups and names of
// -only), the Cloud Scheduler job of reconcileCounters, the Firestore
// indexes and TTL policies the chosen functions need, and the rules only
// when asked (-firestore-from, -replace-rules), with gcloud and the Firebase
// Rules API alone, so the plan is the same whatever is installed.
// scripts/deploy.sh runs it,
// or prints it with --dry-run. Generating the plan from the catalog and
// from config.Settings means a new function or setting cannot be left out.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
)

func main() {
	var p plan
	flag.StringVar(&p.project, "project", "", "Google Cloud project (required)")
	flag.StringVar(&p.region, "region", "us-central1", "region of the functions")
	flag.StringVar(&p.only, "only", "", "deploy only these groups (counters, instruments) or functions, comma-separated")
	flag.StringVar(&p.triggerLocation, "trigger-location", "", "location of the Firestore database, when it differs from the region (e.g. nam5)")
	flag.StringVar(&p.firestoreFrom, "firestore-from", "", "deploy the rules and indexes of this app directory, the files its firebase.json names (they must hold shardcount's; scripts/firebase-merge.sh merges them)")
	flag.StringVar(&p.database, "database", cmp.Or(os.Getenv("FIRESTORE_DATABASE"), "(default)"), "the Firestore database (default FIRESTORE_DATABASE, as the functions read it)")
	flag.BoolVar(&p.replaceRules, "replace-rules", false, "deploy this repository's firestore.rules as the project's rules, replacing whatever rules it has")
	flag.StringVar(&p.schedule, "reconcile-schedule", "*/15 * * * *", "cron schedule of reconcileCounters (Cloud Scheduler)")
	flag.BoolVar(&p.insecureOpen, "insecure-open", false, "allow AUTH=off: every public function open to anyone")
	flag.Parse()
	if err := p.write(os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "deployplan:", err)
		os.Exit(2)
	}
}

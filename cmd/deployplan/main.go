// Command deployplan prints, as a bash script, every command that deploys
// the project to Google Cloud: one `gcloud functions deploy` per function
// chosen from service.Catalog (all of them, or the groups and names of
// -only), the Cloud Scheduler job of reconcileCounters, the Firestore
// indexes and TTL policies the chosen functions need, and the rules only
// when asked (-firestore-from, -replace-rules), with gcloud and the Firebase
// Rules API alone, so the plan is the same whatever is installed, and
// every command works from any directory. The functions get the settings
// of the app's settings file (-settings), never the shell's.
// scripts/deploy.sh runs it, or prints it with --dry-run. Generating the
// plan from the catalog and from config.Settings means a new function or
// setting cannot be left out.
//
// With -check-deployed it plans nothing: it reads the settings of the
// chosen functions as deployed (gcloud functions list) and fails when the
// settings file would drop a kind of counters they count, count it
// otherwise, move the counters' database or lower INSTRUMENT_SHARDS
// (scripts/deploy.sh runs it before a real deploy).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardcount/shardcount/internal/config"
)

func main() {
	var p plan
	var settings string
	var check, allowKindChanges bool
	flag.StringVar(&p.project, "project", "", "Google Cloud project (required)")
	flag.StringVar(&p.region, "region", "us-central1", "region of the functions")
	flag.StringVar(&p.only, "only", "", "deploy only these groups (counters, instruments) or functions, comma-separated")
	flag.StringVar(&p.triggerLocation, "trigger-location", "", "location of the Firestore database, when it differs from the region (e.g. nam5)")
	flag.StringVar(&p.firestoreFrom, "firestore-from", "", "deploy the rules and indexes of this app directory, the files its firebase.json names (they must hold shardcount's; scripts/firebase-merge.sh merges them)")
	flag.StringVar(&settings, "settings", "", "the app's settings file ("+config.FileName+"); none: every setting at its default")
	flag.BoolVar(&p.replaceRules, "replace-rules", false, "deploy this repository's firestore.rules as the project's rules, replacing whatever rules it has")
	flag.BoolVar(&p.insecureOpen, "insecure-open", false, "allow AUTH=off: every public function open to anyone")
	flag.BoolVar(&check, "check-deployed", false, "plan nothing: fail if the deployed functions count a kind the settings file drops or counts otherwise, keep their counters in another database, or have more instrument shards")
	flag.BoolVar(&allowKindChanges, "allow-kind-changes", false, "with -check-deployed: report those changes, and go ahead")
	flag.Parse()
	if err := p.load(settings); err != nil {
		fmt.Fprintln(os.Stderr, "deployplan:", err)
		os.Exit(2)
	}
	if check {
		if err := p.checkDeployed(os.Stdout, gcloudList, allowKindChanges); err != nil {
			fmt.Fprintln(os.Stderr, "deploy:", err)
			os.Exit(1)
		}
		return
	}
	if err := p.write(os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "deployplan:", err)
		os.Exit(2)
	}
}

// load reads the settings file (none: the defaults) and takes the source
// directory as the current one, absolute.
func (p *plan) load(settings string) error {
	if settings != "" {
		f, err := config.ReadFile(settings)
		if err != nil {
			return err
		}
		p.settings = f
	}
	p.database = p.settings.Value("FIRESTORE_DATABASE")
	var err error
	p.source, err = filepath.Abs(".")
	return err
}

#!/usr/bin/env bash
# Deploys the functions as 2nd-gen Cloud Functions, schedules
# reconcileCounters, and adds the Firestore indexes and TTL policies they
# need. Firestore rules are deployed only when asked: they would replace an
# app's own.
#
#   scripts/deploy.sh --project my-project [--firestore-from PATH_TO_APP]
#       [--settings FILE] [--region us-central1] [--only GROUPS|NAMES]
#       [--trigger-location nam5] [--replace-rules] [--allow-kind-changes]
#       [--dry-run] [--force] [--insecure-open]
#
# The functions get the settings of the app's settings file,
# shardcount.env.yaml beside its firebase.json (--firestore-from PATH_TO_APP
# finds it there; --settings FILE names another, such as
# shardcount.staging.env.yaml), validated before anything is deployed;
# without one, every setting at its default. A setting set in this shell to
# another value than the file's is refused: what deploys never depends on
# the shell. Secrets stay in Secret Manager and are named here:
# PAGE_TOKEN_SECRET=page-token (needed only with queryInstruments).
# --firestore-from also deploys the app's rules and indexes (the files its
# firebase.json names) once scripts/firebase-merge.sh merged shardcount's
# into them (refused otherwise); --replace-rules deploys this repository's
# own, replacing the project's rules. Paths are relative to where you run
# this. Before deploying, a real run reads the deployed functions' kinds
# (gcloud functions list) and refuses to drop one or count it
# otherwise, unless --allow-kind-changes. --only takes groups (counters,
# instruments) or function names, comma-separated. Project and region also
# come from PROJECT_ID (or GOOGLE_CLOUD_PROJECT) and REGION; the Firestore
# location from FIRESTORE_LOCATION. AUTH=off needs --insecure-open.
# --dry-run prints every command a real run executes (gcloud and the
# Firebase Rules API only), each of them working from any directory; the
# plan is generated from the function catalog by cmd/deployplan.
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture

die() { echo "deploy: $*" >&2; exit 1; }
usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

project=${PROJECT_ID:-${GOOGLE_CLOUD_PROJECT:-}}
region=${REGION:-us-central1}
trigger_location=${FIRESTORE_LOCATION:-}
only= dry_run= force= insecure_open= firestore_from= replace_rules= settings= allow_kind_changes=
while [ $# -gt 0 ]; do
  case "$1" in
    --project) project=${2:?--project needs a value}; shift 2 ;;
    --project=*) project=${1#*=}; shift ;;
    --region) region=${2:?--region needs a value}; shift 2 ;;
    --region=*) region=${1#*=}; shift ;;
    --only) only=${2:?--only needs groups or function names}; shift 2 ;;
    --only=*) only=${1#*=}; shift ;;
    --trigger-location) trigger_location=${2:?--trigger-location needs a value}; shift 2 ;;
    --trigger-location=*) trigger_location=${1#*=}; shift ;;
    --firestore-from) firestore_from=${2:?--firestore-from needs the app directory}; shift 2 ;;
    --firestore-from=*) firestore_from=${1#*=}; shift ;;
    --settings) settings=${2:?--settings needs a file}; shift 2 ;;
    --settings=*) settings=${1#*=}; shift ;;
    --allow-kind-changes) allow_kind_changes=1; shift ;;
    --replace-rules) replace_rules=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --force) force=1; shift ;;
    --insecure-open) insecure_open=1; shift ;;
    -h|--help) usage ;;
    *) echo "deploy: unknown argument $1" >&2; usage 2 ;;
  esac
done
[ -n "$project" ] || die "no project: pass --project or set PROJECT_ID"
# Paths mean what they meant where the script was run.
if [ -n "$firestore_from" ]; then
  firestore_from=$(cd -- "$firestore_from" 2>/dev/null && pwd -P) || die "--firestore-from: $firestore_from is not a directory"
fi
if [ -n "$settings" ]; then
  given=$settings
  settings=$(cd -- "$(dirname -- "$given")" 2>/dev/null && echo "$(pwd -P)/$(basename -- "$given")") || die "--settings: $given does not exist"
  [ -f "$settings" ] || die "--settings: $given does not exist"
elif [ -n "$firestore_from" ] && [ -f "$firestore_from/shardcount.env.yaml" ]; then
  settings=$firestore_from/shardcount.env.yaml
fi
cd "$(dirname "$0")/.."
command -v go >/dev/null 2>&1 || die "Go is needed to generate the deploy plan (https://go.dev/dl/)"

if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  if [ -n "$dry_run" ]; then
    echo "deploy: warning: uncommitted changes; a real deploy would refuse without --force" >&2
  elif [ -z "$force" ]; then
    die "uncommitted changes: commit them first (what is deployed should be a commit), or pass --force"
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go run keeps the built plan generator in Go's build cache: a deploy after
# the first starts in a second. Its own "exit status" line says nothing the
# generator did not; the generator's messages are shown, in order, before
# the script goes on or stops.
deployplan() {
  local status=0
  go run ./cmd/deployplan "$@" 2>"$tmp/deployplan.err" || status=$?
  grep -v '^exit status [0-9]*$' "$tmp/deployplan.err" >&2 || true
  return "$status"
}
args=(-project "$project" -region "$region" -only "$only" -settings "$settings")
plan=$(deployplan "${args[@]}" -trigger-location "$trigger_location" -firestore-from "$firestore_from" \
  ${replace_rules:+-replace-rules} ${insecure_open:+-insecure-open})

if [ -n "$dry_run" ]; then
  printf '%s\n' "$plan"
  exit 0
fi
command -v gcloud >/dev/null 2>&1 || die "gcloud is not installed (https://cloud.google.com/sdk/docs/install)"
command -v curl >/dev/null 2>&1 || die "curl is needed for the Firebase Rules API"
# No deploy drops a kind, or counts it otherwise, by accident.
deployplan "${args[@]}" -check-deployed ${allow_kind_changes:+-allow-kind-changes}
# A file, not bash -c: an app's rules in the plan may pass the limit of one
# command-line argument (128 KiB).
plan_file=$tmp/plan.sh
printf '%s\n' "$plan" >"$plan_file"
bash "$plan_file"
echo "deployed to $project ($region)"

#!/usr/bin/env bash
# Deploys the functions as 2nd-gen Cloud Functions, schedules
# reconcileCounters, and adds the Firestore indexes and TTL policies they
# need. Firestore rules are deployed only when asked: they would replace an
# app's own.
#
#   PAGE_TOKEN_SECRET=page-token scripts/deploy.sh --project my-project
#       [--region us-central1] [--only GROUPS|NAMES] [--trigger-location nam5]
#       [--firestore-from PATH_TO_APP | --replace-rules]
#       [--dry-run] [--force] [--insecure-open]
#
# --only takes groups (counters, instruments) or function names, comma-
# separated. --firestore-from deploys an app's rules and indexes (the files
# its firebase.json names; a path relative to where you run this) after
# scripts/firebase-merge.sh merged shardcount's into them (refused
# otherwise); --replace-rules deploys this repository's own, replacing the
# project's rules. Project and region also come from PROJECT_ID (or
# GOOGLE_CLOUD_PROJECT) and REGION; the Firestore location from
# FIRESTORE_LOCATION. The functions get the deployed settings of
# docs/reference/settings.md that are set in this environment, validated
# before anything is deployed; PAGE_TOKEN_SECRET names a Secret Manager
# secret and is needed only with queryInstruments. AUTH=off needs
# --insecure-open. --dry-run prints every command a real run executes, the
# same plan on every machine (gcloud and the Firebase Rules API only). The
# plan itself is generated from the function catalog by cmd/deployplan.
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture

die() { echo "deploy: $*" >&2; exit 1; }
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

project=${PROJECT_ID:-${GOOGLE_CLOUD_PROJECT:-}}
region=${REGION:-us-central1}
trigger_location=${FIRESTORE_LOCATION:-}
only= dry_run= force= insecure_open= firestore_from= replace_rules=
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
cd "$(dirname "$0")/.."
command -v go >/dev/null 2>&1 || die "Go is needed to generate the deploy plan (https://go.dev/dl/)"

if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  if [ -n "$dry_run" ]; then
    echo "deploy: warning: uncommitted changes; a real deploy would refuse without --force" >&2
  elif [ -z "$force" ]; then
    die "uncommitted changes: commit them first (what is deployed should be a commit), or pass --force"
  fi
fi

plan=$(go run ./cmd/deployplan -project "$project" -region "$region" -only "$only" \
  -trigger-location "$trigger_location" -firestore-from "$firestore_from" -database "${FIRESTORE_DATABASE:-(default)}" \
  ${replace_rules:+-replace-rules} ${insecure_open:+-insecure-open})

if [ -n "$dry_run" ]; then
  printf '%s\n' "$plan"
  exit 0
fi
command -v gcloud >/dev/null 2>&1 || die "gcloud is not installed (https://cloud.google.com/sdk/docs/install)"
command -v curl >/dev/null 2>&1 || die "curl is needed for the Firebase Rules API"
# A file, not bash -c: an app's rules in the plan may pass the limit of one
# command-line argument (128 KiB).
plan_file=$(mktemp)
trap 'rm -f "$plan_file"' EXIT
printf '%s\n' "$plan" >"$plan_file"
bash "$plan_file"
echo "deployed to $project ($region)"

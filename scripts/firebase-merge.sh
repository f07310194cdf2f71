#!/usr/bin/env bash
# Merges shardcount's Firestore rules and indexes into an existing Firebase
# app's files, in place, keeping the app's own: the files the app's
# firebase.json names (or firestore.rules and firestore.indexes.json in its
# directory).
#
#   scripts/firebase-merge.sh [--only GROUPS] PATH_TO_APP          # writes the app's files
#   scripts/firebase-merge.sh --check [--only GROUPS] PATH_TO_APP  # writes nothing; fails if they lack ours
#
# PATH_TO_APP is relative to where you run it. --only takes the groups your
# app deploys (counters, instruments), comma-separated; without it, all.
# The database's entry of firebase.json is FIRESTORE_DATABASE's, the app's
# settings file's (shardcount.env.yaml) unless set here to the same. The rules
# are a marked block spliced into the app's documents scope (a second run
# refreshes it and keeps its switch); the indexes and field overrides are
# added unless there, as lines of their own (every line of the app's stays,
# but an empty list on one line, [], which opens to hold them).
# It also creates the app's settings file, shardcount.env.yaml, beside its
# firebase.json, when it has none (never overwriting one). Every run prints
# the warnings of the app's files. Running it twice changes nothing.
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
check= only=
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=-check; shift ;;
    --only) only=${2:?--only needs groups}; shift 2 ;;
    --only=*) only=${1#*=}; shift ;;
    -h|--help) usage ;;
    -*) echo "firebase-merge: unknown option $1" >&2; usage 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: scripts/firebase-merge.sh [--check] [--only GROUPS] PATH_TO_APP" >&2; exit 2; }
# The app's path means what it meant where the script was run.
app=$(cd -- "$1" 2>/dev/null && pwd -P) || { echo "firebase-merge: $1 is not a directory" >&2; exit 2; }
cd "$(dirname "$0")/.."
exec go run ./cmd/firebasemerge $check -only "$only" ${FIRESTORE_DATABASE:+-database "$FIRESTORE_DATABASE"} "$app"

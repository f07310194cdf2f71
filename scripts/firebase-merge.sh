#!/usr/bin/env bash
# Merges shardcount's Firestore rules and indexes into an existing Firebase
# app's files, in place, keeping the app's own:
#
#   scripts/firebase-merge.sh PATH_TO_APP          # writes PATH_TO_APP/firestore.rules and firestore.indexes.json
#   scripts/firebase-merge.sh --check PATH_TO_APP  # writes nothing; fails if they are not up to date
#
# The rules are a marked block spliced into the app's documents scope (a
# second run refreshes it and keeps its switch); the indexes and field
# overrides are added unless there. Running it twice changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
check=
case "${1:-}" in
  --check) check=-check; shift ;;
  -h|--help|"") sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 1 ] || { echo "usage: scripts/firebase-merge.sh [--check] PATH_TO_APP" >&2; exit 2; }
app=$(cd "$1" 2>/dev/null && pwd) || { echo "firebase-merge: $1 is not a directory" >&2; exit 2; }
exec go run ./cmd/firebasemerge $check "$app"

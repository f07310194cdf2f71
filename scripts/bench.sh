#!/usr/bin/env bash
# Reproduces bench/README.md: starts a private Firestore emulator and three
# function servers, runs `loadgen suite` (functions with and without group
# commit against the raw emulator, in one run), and rewrites the results in
# bench/README.md, bench/results.json, bench/increments.svg and
# bench/groupcommit.svg. Extra arguments go to loadgen (e.g. -d 10s for
# longer runs, the default being 5s per measurement; -soak 0 skips the
# 3-minute soak). About 15 minutes.
#
# The write-throughput runs use a project with no roll-up trigger, in every
# mode, so they compare the same work: the emulator delivers trigger events
# one at a time on the same CPUs, and would otherwise tax whichever run
# comes next. They run with GROUP_COMMIT_MAX_WAIT=0, as deployed. The
# roll-up runs (lag, soak) use a project with the trigger and 2ms, as
# scripts/dev.sh (README "Group commit" says why).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

sc_workdir

echo "building…"
go build -o "$tmp/devserver" ./cmd/devserver
go build -o "$tmp/loadgen" ./cmd/loadgen

fs_port=$(sc_free_port)
trigger_port=$(sc_free_port)
sc_start_firestore "$fs_port" "$tmp/firestore.log" --functions_emulator="127.0.0.1:$trigger_port"
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs_port

on_port=$(sc_free_port)
off_port=$(sc_free_port)
rollup_port=$(sc_free_port)
# Functions as deployed, minus authentication (no token to mint here).
common=(AUTH=off "FIRESTORE_EMULATOR_HOST=$FIRESTORE_EMULATOR_HOST" SHARD_COUNT_CACHE=2s)
sc_start on "$tmp/on.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-writes GROUP_COMMIT=on \
  "$tmp/devserver" -port "$on_port"
sc_start off "$tmp/off.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-writes GROUP_COMMIT=off \
  "$tmp/devserver" -port "$off_port"
sc_start rollup "$tmp/rollup.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-rollup GROUP_COMMIT_MAX_WAIT=2ms \
  "$tmp/devserver" -port "$rollup_port" -trigger-port "$trigger_port"
sc_wait_http "http://127.0.0.1:$on_port/" 30 "$SC_PID_on" "$tmp/on.log"
sc_wait_http "http://127.0.0.1:$off_port/" 30 "$SC_PID_off" "$tmp/off.log"
sc_wait_http "http://127.0.0.1:$rollup_port/" 30 "$SC_PID_rollup" "$tmp/rollup.log"

"$tmp/loadgen" -url "http://127.0.0.1:$on_port" -url-no-group-commit "http://127.0.0.1:$off_port" \
  -rollup-url "http://127.0.0.1:$rollup_port" -project demo-bench-writes -raw-project demo-bench-raw \
  -d 5s -quiet -out bench "$@" suite

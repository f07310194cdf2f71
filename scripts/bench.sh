#!/usr/bin/env bash
# Reproduces bench/README.md: starts a private Firestore emulator and two
# function servers, runs `loadgen suite` (functions vs the raw emulator, in
# one run), and rewrites the results in bench/README.md, bench/results.json
# and bench/increments.svg. Extra arguments go to loadgen (e.g. -d 10s for
# longer runs; the default is 5s per measurement). About 4 minutes.
#
# The write-throughput runs use a project with no roll-up trigger, in both
# modes, so they compare the same work: the emulator delivers trigger events
# one at a time on the same CPUs, and would otherwise tax whichever run comes
# next. The roll-up-lag run uses a project with the trigger.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

sc_workdir

go build -o "$tmp/devserver" ./cmd/devserver
go build -o "$tmp/loadgen" ./cmd/loadgen

fs_port=$(sc_free_port)
trigger_port=$(sc_free_port)
sc_start_firestore "$fs_port" "$tmp/firestore.log" --functions_emulator="127.0.0.1:$trigger_port"
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs_port

writes_port=$(sc_free_port)
rollup_port=$(sc_free_port)
# Functions as deployed, minus authentication (no token to mint here).
common=(AUTH=off "FIRESTORE_EMULATOR_HOST=$FIRESTORE_EMULATOR_HOST")
sc_start writes "$tmp/writes.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-writes \
  "$tmp/devserver" -port "$writes_port"
sc_start rollup "$tmp/rollup.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-rollup \
  "$tmp/devserver" -port "$rollup_port" -trigger-port "$trigger_port"
sc_wait_http "http://127.0.0.1:$writes_port/" 30 "$SC_PID_writes" "$tmp/writes.log"
sc_wait_http "http://127.0.0.1:$rollup_port/" 30 "$SC_PID_rollup" "$tmp/rollup.log"

"$tmp/loadgen" -url "http://127.0.0.1:$writes_port" -rollup-url "http://127.0.0.1:$rollup_port" \
  -project demo-bench-writes -raw-project demo-bench-raw -d 5s -quiet -out bench "$@" suite

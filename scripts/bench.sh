#!/usr/bin/env bash
# Reproduces bench/README.md: starts a private Firestore emulator, the Auth
# emulator and seven function servers, runs `loadgen suite` (functions with
# and without group commit against the raw emulator, likes and reactions
# against raw transactions, a distinct counter's views against a unique
# one's, one instance against two, windows on and off, in one run),
# and rewrites the results in bench/README.md, bench/results.json,
# bench/increments.svg and bench/groupcommit.svg. Extra arguments go to
# loadgen (e.g. -d 10s for longer runs, the default being 5s per
# measurement; -soak 0 skips the 3-minute soak; -million 0 skips the
# many counters: 200,000 by default, -million 1000000 for a million;
# -only reactions -rounds 1 runs the reactions alone and prints their
# table, writing no results; -only views the views). About 30 minutes.
#
# The write-throughput runs use a project with no roll-up trigger, in every
# mode, so they compare the same work: the emulator delivers trigger events
# one at a time on the same CPUs, and would otherwise tax whichever run
# comes next. They run with GROUP_COMMIT_MAX_WAIT=0, as deployed. The
# roll-up runs (lag, soak) use a project with the trigger and 2ms, as
# scripts/dev.sh (README "Group commit" says why).
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture
cd "$(dirname "$0")/.."
. scripts/lib.sh

sc_workdir

echo "building…"
go build -o "$tmp/devserver" ./cmd/devserver
go build -o "$tmp/loadgen" ./cmd/loadgen
sc_npm_ci

fs_port=$(sc_free_port)
trigger_port=$(sc_free_port)
sc_start_firestore "$fs_port" "$tmp/firestore.log" --functions_emulator="127.0.0.1:$trigger_port"
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs_port
# The likes and reactions sign users up here: its tokens are for the
# writes project.
auth_port=$(sc_free_port)
mkdir -p "$tmp/auth"
PROJECT_ID=demo-bench-writes sc_start_auth "$auth_port" "$tmp/auth"
export FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:$auth_port

ports=()
for _ in 1 2 3 4 5 6 7 8 9; do ports+=("$(sc_free_port)"); done
on=${ports[0]} on2=${ports[1]} off=${ports[2]} rollup=${ports[3]} two_a=${ports[4]} two_b=${ports[5]} nowin=${ports[6]}
million=${ports[7]} touch=${ports[8]}
url() { echo "http://127.0.0.1:$1"; }
# Functions as deployed, minus authentication (AUTH=off; a token that is
# sent is still checked, which the likes need).
common=(AUTH=off "FIRESTORE_EMULATOR_HOST=$FIRESTORE_EMULATOR_HOST" "FIREBASE_AUTH_EMULATOR_HOST=$FIREBASE_AUTH_EMULATOR_HOST" SHARD_COUNT_CACHE=2s
  'COUNTER_KINDS={"likes": {"unique": true, "num_shards": 10}, "views": {"num_shards": 10}, "reactions": {"choices": ["like", "love", "haha", "wow", "sad", "angry"], "num_shards": 10}, "viewers": {"distinct": true, "num_shards": 10}}')
sc_start on "$tmp/on.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-writes GROUP_COMMIT=on "$tmp/devserver" -port "$on"
sc_start on2 "$tmp/on2.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-writes GROUP_COMMIT=on "$tmp/devserver" -port "$on2"
sc_start off "$tmp/off.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-writes GROUP_COMMIT=off "$tmp/devserver" -port "$off"
# The roll-up: one server takes the emulator's events and delivers those
# of demo-bench-rollup to itself, of demo-bench-rollup2 to two servers at
# random (two instances), of demo-bench-nowin to a server with WINDOWS=off.
sc_start rollup "$tmp/rollup.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-rollup GROUP_COMMIT_MAX_WAIT=2ms \
  "$tmp/devserver" -port "$rollup" -trigger-port "$trigger_port" \
  -route "demo-bench-rollup2=$(url "$two_a"),$(url "$two_b")" -route "demo-bench-nowin=$(url "$nowin")" \
  -route "demo-bench-million=$(url "$million")"
sc_start two_a "$tmp/two_a.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-rollup2 GROUP_COMMIT_MAX_WAIT=2ms "$tmp/devserver" -port "$two_a"
sc_start two_b "$tmp/two_b.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-rollup2 GROUP_COMMIT_MAX_WAIT=2ms "$tmp/devserver" -port "$two_b"
sc_start nowin "$tmp/nowin.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-nowin GROUP_COMMIT_MAX_WAIT=2ms WINDOWS=off "$tmp/devserver" -port "$nowin"
# A million counters: one server takes demo-bench-million's roll-up events,
# another (whose memory is measured) reads every counter.
sc_start million "$tmp/million.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-million GROUP_COMMIT_MAX_WAIT=2ms LOG_LEVEL=warn "$tmp/devserver" -port "$million"
sc_start touch "$tmp/touch.log" env "${common[@]}" GOOGLE_CLOUD_PROJECT=demo-bench-million GROUP_COMMIT_MAX_WAIT=2ms LOG_LEVEL=warn "$tmp/devserver" -port "$touch"
for name in on on2 off rollup two_a two_b nowin million touch; do
  pid=SC_PID_$name port=${!name}
  sc_wait_http "$(url "$port")/" 30 "${!pid}" "$tmp/$name.log"
done

"$tmp/loadgen" -url "$(url "$on")" -url-second "$(url "$on2")" -url-no-group-commit "$(url "$off")" \
  -rollup-url "$(url "$rollup")" -rollup-urls-two "$(url "$two_a"),$(url "$two_b")" -rollup-url-no-windows "$(url "$nowin")" \
  -million-url "$(url "$million")" -million-touch-url "$(url "$touch")" -million-project demo-bench-million \
  -project demo-bench-writes -raw-project demo-bench-raw -rollup-project demo-bench-rollup \
  -d 5s -quiet -out bench "$@" suite

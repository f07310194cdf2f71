#!/usr/bin/env bash
# The test command: gofmt check, go vet, and go test -race against a private
# Firestore emulator and Auth emulator on free ports, stopped even when a test
# fails. The Auth emulator comes with the Firebase CLI, installed once from
# package-lock.json (npm ci).
# Extra arguments go to `go test` (default ./...).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

sc_workdir

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[ -z "$unformatted" ] || { echo "gofmt would change:"; echo "$unformatted"; exit 1; }

echo "== go vet, go mod tidy"
go vet ./...
go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== Firestore emulator"
fs_port=$(sc_free_port)
trigger_addr=127.0.0.1:$(sc_free_port)
sc_start_firestore "$fs_port" "$tmp/firestore.log" \
  --rules=firestore.rules --functions_emulator="$trigger_addr"
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs_port
# Where the emulator delivers trigger events; the roll-up tests listen here.
export SHARDCOUNT_TRIGGER_ADDR=$trigger_addr
# Where tests that stop an emulator of their own find it.
export SHARDCOUNT_EMULATOR_LAUNCHER=$(sc_emulator_launcher)
echo "emulator on $FIRESTORE_EMULATOR_HOST, triggers to $trigger_addr"

echo "== Auth emulator"
auth_port=$(sc_free_port)
mkdir -p "$tmp/auth"
sc_start_auth "$auth_port" "$tmp/auth"
export FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:$auth_port
echo "Auth emulator on $FIREBASE_AUTH_EMULATOR_HOST"

export SHARDCOUNT_REQUIRE_EMULATORS=1 # a missing emulator fails here, rather than skipping
echo "== go test -race"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(./...)
if ! go test -race -count=1 -timeout ${GO_TEST_TIMEOUT:-10m} "${args[@]}"; then
  echo "--- last lines of the emulator log" >&2
  tail -n 20 "$tmp/firestore.log" >&2
  exit 1
fi
echo "== all tests passed"

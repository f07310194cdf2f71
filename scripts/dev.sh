#!/usr/bin/env bash
# Runs the product locally: the Firestore emulator (with firestore.rules) and
# every function in one functions-framework server, wired together. Ctrl-C
# stops everything it started.
#
#   PROJECT_ID      emulator project        (default demo-shardcount)
#   FIRESTORE_PORT  Firestore emulator port (default 8080)
#   FUNCTIONS_PORT  functions port          (default 8081)
#   TRIGGER_PORT    where the emulator delivers trigger events (default 8082)
#   AUTH            off | required          (default off here; required when deployed)
#   GROUP_COMMIT_MAX_WAIT                   (default 2ms here; 0 when deployed)
#   AUTH_PORT       Auth emulator port, with AUTH=required (default 9099)
# Any other setting of the README's table is passed through to the functions.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

PROJECT_ID=${PROJECT_ID:-demo-shardcount}
FIRESTORE_PORT=${FIRESTORE_PORT:-8080}
FUNCTIONS_PORT=${FUNCTIONS_PORT:-8081}
TRIGGER_PORT=${TRIGGER_PORT:-8082}
export AUTH=${AUTH:-off}
# The emulator sends trigger events one at a time (about 1,000/s here): pace a
# hot counter's commits below that (README "Group commit").
export GROUP_COMMIT_MAX_WAIT=${GROUP_COMMIT_MAX_WAIT:-2ms}
AUTH_PORT=${AUTH_PORT:-9099}

command -v go >/dev/null 2>&1 || sc_die "Go is not installed (https://go.dev/dl/); go.mod needs $(sed -n 's/^go //p' go.mod) or newer."
command -v curl >/dev/null 2>&1 || sc_die "curl is not installed (sudo apt-get install -y curl)."
sc_emulator_launcher >/dev/null

tmp=$(mktemp -d)
cleanup() { trap - EXIT INT TERM; echo; echo "stopping…"; sc_stop_all; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 0' INT TERM

sc_port_free "$FUNCTIONS_PORT" || sc_die "port $FUNCTIONS_PORT is in use (set FUNCTIONS_PORT)"
sc_port_free "$TRIGGER_PORT" || sc_die "port $TRIGGER_PORT is in use (set TRIGGER_PORT)"

echo "building the functions…"
go build -o "$tmp/devserver" ./cmd/devserver

echo "starting the Firestore emulator on 127.0.0.1:$FIRESTORE_PORT…"
sc_start_firestore "$FIRESTORE_PORT" "$tmp/firestore.log" \
  --project_id="$PROJECT_ID" --rules=firestore.rules --functions_emulator="127.0.0.1:$TRIGGER_PORT"

if [ "$AUTH" = required ]; then
  echo "starting the Auth emulator on 127.0.0.1:$AUTH_PORT…"
  mkdir -p "$tmp/auth"
  sc_start_auth "$AUTH_PORT" "$tmp/auth"
  export FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:$AUTH_PORT
fi

echo "starting the functions on 127.0.0.1:$FUNCTIONS_PORT…"
GOOGLE_CLOUD_PROJECT=$PROJECT_ID FIRESTORE_EMULATOR_HOST=127.0.0.1:$FIRESTORE_PORT \
  sc_start functions - "$tmp/devserver" -port "$FUNCTIONS_PORT" -trigger-port "$TRIGGER_PORT"
sc_wait_http "http://127.0.0.1:$FUNCTIONS_PORT/" 30 "$SC_PID_functions" /dev/null

base=http://127.0.0.1:$FUNCTIONS_PORT
cat <<MSG

Ready. Project $PROJECT_ID, AUTH=$AUTH.
  Firestore emulator  127.0.0.1:$FIRESTORE_PORT   (export FIRESTORE_EMULATOR_HOST=127.0.0.1:$FIRESTORE_PORT)
  Functions           $base/<name>   createCounter incrementCounter getCounter reconcileCounters
                      recordInstruments queryInstruments
  Roll-up             rollupCounter runs on every shard write (events from the emulator via :$TRIGGER_PORT)

Try it:
  curl -s -X POST $base/createCounter -H 'Content-Type: application/json' -d '{"counter_id":"post-1","num_shards":10}'
  curl -s -X POST $base/incrementCounter -H 'Content-Type: application/json' -d '{"counter_id":"post-1"}'
  curl -s "$base/getCounter?counter_id=post-1&consistency=strong"
  curl -s "$base/getCounter?counter_id=post-1"     # eventual: the roll-up, caught up within ~1s
  curl -s -X POST $base/recordInstruments -H 'Content-Type: application/json' -d '{"instruments":[{"symbol":"AAA","price":{"currency":"USD","micros":34790000},"exchange":"EXCHG1","instrumentType":"commonstock","timestamp":"2019-01-01T13:45:23.010Z"}]}'
  curl -s "$base/queryInstruments?field=exchange&value=EXCHG1&limit=10"

Ctrl-C stops everything.
MSG
if [ "$AUTH" = required ]; then
  cat <<MSG
AUTH=required: the Auth emulator runs on 127.0.0.1:$AUTH_PORT. Sign a user up and keep the token:
  token=\$(curl -s -X POST 'http://127.0.0.1:$AUTH_PORT/identitytoolkit.googleapis.com/v1/accounts:signUp?key=any' \\
    -H 'Content-Type: application/json' -d '{"email":"me@example.com","password":"secret1","returnSecureToken":true}' \\
    | sed -n 's/.*"idToken": *"\([^"]*\)".*/\1/p')
then add  -H "Authorization: Bearer \$token"  to the curl commands above.
MSG
fi
wait "$SC_PID_functions"

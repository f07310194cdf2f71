#!/usr/bin/env bash
# Runs the product locally: the Firestore emulator (with firestore.rules),
# the Auth emulator, every function in one server, and the web app, wired
# together. Ctrl-C stops everything it started.
#
#   PROJECT_ID      emulator project        (default demo-shardcount)
#   FIRESTORE_PORT  Firestore emulator port (default 8080)
#   FUNCTIONS_PORT  functions port          (default 8081)
#   TRIGGER_PORT    where the emulator delivers trigger events (default 8082)
#   AUTH_PORT       Auth emulator port; it also takes AUTH_PORT+1 and +2 (default 9099)
#   WEB_PORT        the web app (default 5173)
#   APP_FUNCTIONS_PORT  with --app-functions: the app's Functions emulator (default 5001; it also
#                   takes the four ports after it)
#   AUTH            off | required          (default off here; required when deployed)
#   COUNTER_KINDS   the app's kinds (default {"likes": {"unique": true}, "views": {}, "reactions": {"choices": ["like", "love", "haha", "wow", "sad", "angry"]}}, the web app's and the guides')
#   APP_CHECK       off | monitor | enforce (default off); on, a local stand-in for Google's App Check
#                                            mints and checks the tokens (the web app uses it)
#   RECONCILE_EVERY how often reconcileCounters runs, as Cloud Scheduler does deployed (default 1m)
#   RULES           the Firestore rules the emulator enforces (default firestore.rules); with
#                   --firestore-from PATH_TO_APP, the rules file the app's firebase.json names, so
#                   your app's rules are tested together with shardcount's (merged into them by
#                   scripts/firebase-merge.sh). Paths are relative to where you run dev.sh.
# --firestore-from PATH_TO_APP also runs the functions with the app's settings file,
# PATH_TO_APP/shardcount.env.yaml, when it has one, as scripts/deploy.sh deploys them;
# --settings FILE names another. A setting of the file's set otherwise in this shell is
# refused; what the file leaves out keeps the defaults below (AUTH=off here).
# --app-functions, with --firestore-from, also runs the app's own functions (its firebase.json's
# "functions", npm-installed) in the Firebase CLI's Functions emulator, their Firestore triggers
# receiving this emulator's writes: shardcount's counter documents among them.
#   GROUP_COMMIT_MAX_WAIT                   (default 2ms here; 0 when deployed)
#   OTEL_*          OpenTelemetry (default: export to this server's own receiver, which the
#                   metrics page at /metrics.html charts; OTEL_SDK_DISABLED=true: off)
#   FIRESTORE_DATABASE  the Firestore database of the counters (default (default)); the trigger,
#                   the functions and the web app use it
# Any other setting of the README's table is passed through to the functions.
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture
app= rules=${RULES:-} settings= app_functions=
while [ $# -gt 0 ]; do
  case "$1" in
    --firestore-from) app=${2:?--firestore-from needs the app directory}; shift 2 ;;
    --firestore-from=*) app=${1#*=}; shift ;;
    --app-functions) app_functions=1; shift ;;
    --settings) settings=${2:?--settings needs a file}; shift 2 ;;
    --settings=*) settings=${1#*=}; shift ;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dev.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
# Paths mean what they meant where the script was run (physical: the
# Firebase CLI resolves firebase.json's paths from the real directory).
if [ -n "$rules" ]; then
  rules=$(cd "$(dirname "$rules")" 2>/dev/null && echo "$(pwd -P)/$(basename "$rules")") || { echo "dev.sh: RULES=$RULES: no such directory" >&2; exit 2; }
fi
if [ -n "$app" ]; then
  app=$(cd -- "$app" 2>/dev/null && pwd -P) || { echo "dev.sh: --firestore-from: $app is not a directory" >&2; exit 2; }
fi
if [ -n "$settings" ]; then
  given=$settings
  settings=$(cd -- "$(dirname -- "$given")" 2>/dev/null && echo "$(pwd -P)/$(basename -- "$given")") || { echo "dev.sh: --settings: $given does not exist" >&2; exit 2; }
  [ -f "$settings" ] || { echo "dev.sh: --settings: $given does not exist" >&2; exit 2; }
elif [ -n "$app" ] && [ -f "$app/shardcount.env.yaml" ]; then
  settings=$app/shardcount.env.yaml
fi
[ -z "$app_functions" ] || [ -n "$app" ] || { echo "dev.sh: --app-functions runs the functions of the app --firestore-from names" >&2; exit 2; }
cd "$(dirname "$0")/.."
. scripts/lib.sh
if [ -n "$settings" ]; then
  # The app's settings, checked against this shell, before the defaults
  # below fill in what the file leaves out.
  exports=$(go run ./cmd/devserver -settings "$settings" -print-env) || exit 2
  eval "$exports"
fi
if [ -n "$app" ]; then
  where=$(go run ./cmd/firebasemerge -where -database "${FIRESTORE_DATABASE:-(default)}" "$app")
  rules=$(printf '%s\n' "$where" | cut -f1)
  groups=$(printf '%s\n' "$where" | cut -f3) # the groups its block holds: checked for those
  go run ./cmd/firebasemerge -check ${groups:+-only "$groups"} -database "${FIRESTORE_DATABASE:-(default)}" "$app" >/dev/null ||
    echo "warning: $rules lacks shardcount's current rules: run scripts/firebase-merge.sh${groups:+ --only $groups} $app" >&2
fi
rules=${rules:-firestore.rules}
[ -f "$rules" ] || sc_die "no rules file $rules"

PROJECT_ID=${PROJECT_ID:-demo-shardcount}
FIRESTORE_PORT=${FIRESTORE_PORT:-8080}
FUNCTIONS_PORT=${FUNCTIONS_PORT:-8081}
TRIGGER_PORT=${TRIGGER_PORT:-8082}
AUTH_PORT=${AUTH_PORT:-9099}
WEB_PORT=${WEB_PORT:-5173}
APP_FUNCTIONS_PORT=${APP_FUNCTIONS_PORT:-5001}
export AUTH=${AUTH:-off}
# The emulator sends trigger events one at a time (about 1,000/s here): pace a
# hot counter's commits below that (README "Group commit").
export GROUP_COMMIT_MAX_WAIT=${GROUP_COMMIT_MAX_WAIT:-2ms}
RECONCILE_EVERY=${RECONCILE_EVERY:-1m}
# The web app's posts have views and likes: counters their first use creates
# (an app's settings file decides its own).
[ -n "$settings" ] || export COUNTER_KINDS=${COUNTER_KINDS:-'{"likes": {"unique": true}, "views": {}, "reactions": {"choices": ["like", "love", "haha", "wow", "sad", "angry"]}}'}
# Telemetry (OTEL_* pass through): unless told otherwise, the functions
# export to the local receiver in cmd/devserver, every 2 s, for the metrics
# page; OTEL_SDK_DISABLED=true turns it off.
if [ -z "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ] && [ "${OTEL_SDK_DISABLED:-}" != true ]; then
  export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$FUNCTIONS_PORT
  export OTEL_METRIC_EXPORT_INTERVAL=${OTEL_METRIC_EXPORT_INTERVAL:-2000} OTEL_BSP_SCHEDULE_DELAY=${OTEL_BSP_SCHEDULE_DELAY:-1000}
fi
local_origins=http://127.0.0.1:$WEB_PORT,http://localhost:$WEB_PORT
if [ -n "${CORS_ORIGINS:-}" ] && [ -n "$settings" ] && [[ ",$CORS_ORIGINS," != *",*,"* ]]; then
  # The settings file's origins are the deployed app's: locally the web
  # app's are allowed too.
  echo "dev.sh: allowing $local_origins too, beside the settings file's CORS_ORIGINS" >&2
  export CORS_ORIGINS=$CORS_ORIGINS,$local_origins
elif [ "$AUTH" = required ]; then
  export CORS_ORIGINS=${CORS_ORIGINS:-$local_origins}
fi

command -v go >/dev/null 2>&1 || sc_die "Go is not installed (https://go.dev/dl/); go.mod needs $(sed -n 's/^go //p' go.mod) or newer."
command -v curl >/dev/null 2>&1 || sc_die "curl is not installed (sudo apt-get install -y curl)."
sc_emulator_launcher >/dev/null
ports=("$FUNCTIONS_PORT" "$TRIGGER_PORT" "$WEB_PORT")
[ -z "$app_functions" ] || ports+=($(seq "$APP_FUNCTIONS_PORT" $((APP_FUNCTIONS_PORT + 4))))
for p in "${ports[@]}"; do
  sc_port_free "$p" || sc_die "port $p is in use (see the ports at the top of scripts/dev.sh)"
done

sc_workdir
trap 'echo; echo "stopping…"; exit 0' INT TERM

echo "building the functions…"
# Into a directory of this checkout's that outlives the run: go build
# relinks only what changed, so a second start takes a second, not five.
bin="${TMPDIR:-/tmp}/shardcount-$(id -u)/$(pwd -P | cksum | cut -d ' ' -f 1)"
mkdir -p "$bin"
go build -o "$bin/devserver" ./cmd/devserver
sc_npm_ci

echo "starting the Firestore emulator on 127.0.0.1:$FIRESTORE_PORT…"
sc_start_firestore "$FIRESTORE_PORT" "$tmp/firestore.log" \
  --project_id="$PROJECT_ID" --rules="$rules" --functions_emulator="127.0.0.1:$TRIGGER_PORT"

echo "starting the Auth emulator on 127.0.0.1:$AUTH_PORT (and $((AUTH_PORT + 1)), $((AUTH_PORT + 2)))…"
mkdir -p "$tmp/auth"
sc_start_auth "$AUTH_PORT" "$tmp/auth"
export FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:$AUTH_PORT

app_args=()
if [ -n "$app_functions" ]; then
  echo "starting the app's own functions ($app) in the Firebase CLI's Functions emulator on 127.0.0.1:$APP_FUNCTIONS_PORT…"
  mkdir -p "$tmp/app-functions"
  "$bin/devserver" -app-config "$app" -app-config-dir "$tmp/app-functions" -app-port "$APP_FUNCTIONS_PORT" || exit 2
  cli=$(cd node_modules/.bin && pwd)/firebase
  # Its functions write to this emulator (the CLI tells only the
  # emulators it starts itself), as the project the triggers belong to.
  sc_start appfunctions - bash -c 'cd "$1" && shift && exec "$@"' _ "$tmp/app-functions" \
    env FIRESTORE_EMULATOR_HOST="127.0.0.1:$FIRESTORE_PORT" FIREBASE_AUTH_EMULATOR_HOST="127.0.0.1:$AUTH_PORT" GCLOUD_PROJECT="$PROJECT_ID" \
    "$cli" emulators:start --only functions --project "$PROJECT_ID" --config "$tmp/app-functions/firebase.json"
  sc_wait_http "http://127.0.0.1:$APP_FUNCTIONS_PORT/backends" 120 "$SC_PID_appfunctions" /dev/null
  app_args=(-app-functions "http://127.0.0.1:$APP_FUNCTIONS_PORT")
fi

echo "starting the functions on 127.0.0.1:$FUNCTIONS_PORT…"
GOOGLE_CLOUD_PROJECT=$PROJECT_ID FIRESTORE_EMULATOR_HOST=127.0.0.1:$FIRESTORE_PORT \
  sc_start functions - "$bin/devserver" -port "$FUNCTIONS_PORT" -trigger-port "$TRIGGER_PORT" -reconcile-every "$RECONCILE_EVERY" ${app_args[@]+"${app_args[@]}"}
sc_wait_http "http://127.0.0.1:$FUNCTIONS_PORT/" 30 "$SC_PID_functions" /dev/null
if [ -n "$app_functions" ]; then
  # Ready once the app's Firestore triggers are registered (the CLI loads
  # its functions after it answers).
  for _ in $(seq 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FUNCTIONS_PORT/debug/app-functions")" = 200 ] && break
    sleep 0.2
  done
fi

echo "serving the web app on 127.0.0.1:$WEB_PORT (esbuild)…"
# esbuild's server stops when its standard input closes: keep one open.
sc_start web "$tmp/web.log" bash -c 'sleep infinity | exec "$@"' _ node_modules/.bin/esbuild examples/web-app/app.js --bundle --format=esm \
  --outdir=examples/web-app/dist --servedir=examples/web-app --serve="127.0.0.1:$WEB_PORT" --log-level=warning
sc_wait_http "http://127.0.0.1:$WEB_PORT/" 30 "$SC_PID_web" "$tmp/web.log"

base=http://127.0.0.1:$FUNCTIONS_PORT
app_line=
[ -z "$app_functions" ] || app_line="
  App functions       those of $app, in the Firebase CLI's Functions emulator on 127.0.0.1:$APP_FUNCTIONS_PORT:
                      their Firestore triggers receive this emulator's writes (their logs are printed here)"
web="http://127.0.0.1:$WEB_PORT/?project=$PROJECT_ID&functions=127.0.0.1:$FUNCTIONS_PORT&firestore=127.0.0.1:$FIRESTORE_PORT&auth=127.0.0.1:$AUTH_PORT${FIRESTORE_DATABASE:+&database=$FIRESTORE_DATABASE}"
case "${APP_CHECK:-off}" in off) ;; *) web="$web&appcheck=$base/debug/appcheck/token${APP_CHECK_CONSUME:+&consume=$APP_CHECK_CONSUME}" ;; esac
cat <<MSG

Ready. Project $PROJECT_ID, AUTH=$AUTH, the emulator enforcing $rules.
  Settings            ${settings:-none (this script's defaults and the shell's)}
  Web app             $web
  Metrics             http://127.0.0.1:$WEB_PORT/metrics.html?functions=127.0.0.1:$FUNCTIONS_PORT   (OpenTelemetry, live)
  Functions           $base/<name>:
$("$bin/devserver" -list | paste -sd ' ' | fold -s -w 70 | sed 's/^/                        /')
                      (and $base/$PROJECT_ID/us-central1/<name> for connectFunctionsEmulator)
  Firestore emulator  127.0.0.1:$FIRESTORE_PORT   (export FIRESTORE_EMULATOR_HOST=127.0.0.1:$FIRESTORE_PORT)
  Auth emulator       127.0.0.1:$AUTH_PORT   (export FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:$AUTH_PORT)
  For your scripts    export GCLOUD_PROJECT=$PROJECT_ID FUNCTIONS_EMULATOR_HOST=127.0.0.1:$FUNCTIONS_PORT
  Roll-up             rollupCounter runs on every shard write (events from the emulator via :$TRIGGER_PORT)$app_line

Try it:
  curl -s -X POST $base/incrementCounter -H 'Content-Type: application/json' -d '{"counter_id":"views:post-1"}'   # its first use creates it
  curl -s "$base/getCounter?counter_id=views:post-1&consistency=strong"
  curl -s "$base/getCounter?counter_id=views:post-1"     # eventual: the roll-up, caught up within ~1s
  curl -s -X POST $base/recordInstruments -H 'Content-Type: application/json' -d '{"instruments":[{"symbol":"AAA","price":{"currency":"USD","micros":34790000},"exchange":"EXCHG1","instrumentType":"commonstock","timestamp":"2019-01-01T13:45:23.010Z"}]}'
  curl -s "$base/queryInstruments?field=exchange&value=EXCHG1&limit=10"
MSG
if [ "$AUTH" = required ]; then
  cat <<MSG

AUTH=required, as deployed: end users count on counters of kinds (COUNTER_KINDS), created by their first
use; only admins create others. Sign a new user up and keep its ID token (a fresh address each time, so it works again):
  token=\$(curl -s -X POST 'http://127.0.0.1:$AUTH_PORT/identitytoolkit.googleapis.com/v1/accounts:signUp?key=any' \\
    -H 'Content-Type: application/json' -d "{\\"email\\":\\"me-\$(date +%s%N)@example.com\\",\\"password\\":\\"secret1\\",\\"returnSecureToken\\":true}" \\
    | sed -n 's/.*"idToken": *"\\([^"]*\\)".*/\\1/p')
  test -n "\$token" || echo "no token: is the Auth emulator on 127.0.0.1:$AUTH_PORT?"
then add  -H "Authorization: Bearer \$token"  to the curl commands above.
MSG
fi
echo
echo "Ctrl-C stops everything."
if [ -n "$app_functions" ]; then
  wait -n "$SC_PID_functions" "$SC_PID_appfunctions" || true
  echo "dev.sh: the functions or the app's Functions emulator exited (see above): stopping everything" >&2
  exit 1
fi
wait "$SC_PID_functions"

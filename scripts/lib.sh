# Shared helpers of scripts/dev.sh and scripts/test.sh; source it, don't run it.
# Every process started here runs in its own process group, so stopping the
# group also stops the emulator's java child.

SC_PIDS=()

sc_die() { echo "error: $*" >&2; exit 1; }

# sc_workdir sets $tmp to a fresh directory and arranges for every process
# started with sc_start, and the directory, to go when the script exits.
sc_workdir() {
  tmp=$(mktemp -d)
  trap sc_cleanup EXIT
  trap 'exit 130' INT TERM
}

# sc_cleanup stops what the script started and removes its directory.
sc_cleanup() {
  sc_stop_all
  rm -rf "$tmp"
}

# sc_emulator_launcher prints the Firestore emulator's launcher script, or
# explains what to install and fails.
sc_emulator_launcher() {
  if ! command -v java >/dev/null 2>&1; then
    sc_die "Java is not installed; the Firestore emulator needs Java 11 or newer.
  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless
  macOS:         brew install openjdk@17"
  fi
  local candidates=(
    "${FIRESTORE_EMULATOR_LAUNCHER:-}"
    /usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator
  )
  if command -v gcloud >/dev/null 2>&1; then
    local root
    root=$(gcloud info --format='value(installation.sdk_root)' 2>/dev/null || true)
    [ -n "$root" ] && candidates+=("$root/platform/cloud-firestore-emulator/cloud_firestore_emulator")
  fi
  local c
  for c in "${candidates[@]}"; do
    if [ -n "$c" ] && [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  sc_die "the Firestore emulator is not installed.
  Debian/Ubuntu (Google Cloud apt repository): sudo apt-get install -y google-cloud-cli-firestore-emulator
  Any gcloud install:                          gcloud components install cloud-firestore-emulator
  Or point FIRESTORE_EMULATOR_LAUNCHER at its cloud_firestore_emulator script."
}

# sc_port_free PORT succeeds when nothing listens on 127.0.0.1:PORT.
sc_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# sc_free_port prints a port nobody listens on, outside the range the kernel
# hands out to outgoing connections and to processes binding port 0.
sc_free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768+)
    if sc_port_free "$p"; then echo "$p"; return 0; fi
  done
  sc_die "no free port found"
}

# sc_start NAME LOG CMD... starts CMD in its own process group, logging to
# LOG ("-" keeps the script's own output).
sc_start() {
  local name=$1 log=$2; shift 2
  if [ "$log" = - ]; then setsid "$@" & else setsid "$@" >"$log" 2>&1 & fi
  SC_PIDS+=("$!")
  eval "SC_PID_${name}=$!"
}

# sc_stop_all stops every process group started by sc_start.
sc_stop_all() {
  local pid
  for pid in "${SC_PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${SC_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  SC_PIDS=()
}

# sc_wait_http URL SECONDS PID LOG waits until URL answers any HTTP status;
# it fails early if PID exits, showing the end of LOG.
sc_wait_http() {
  local url=$1 secs=$2 pid=$3 log=$4
  local deadline=$((SECONDS + secs))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if curl -s -o /dev/null --max-time 1 "$url"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "--- $log" >&2; tail -n 30 "$log" >&2
      sc_die "process for $url exited"
    fi
    sleep 0.2
  done
  echo "--- $log" >&2; tail -n 30 "$log" >&2
  sc_die "$url did not answer within ${secs}s"
}

# sc_start_firestore PORT LOG [EXTRA ARGS...] starts the emulator and waits.
sc_start_firestore() {
  local port=$1 log=$2; shift 2
  local launcher a args=()
  launcher=$(sc_emulator_launcher) || exit 1
  sc_port_free "$port" || sc_die "port $port is in use (set FIRESTORE_PORT)"
  for a in "$@"; do
    case "$a" in
      --rules=*[[:space:]]*)
        # The emulator's launcher splits its arguments at spaces: a rules
        # file whose path has one is reached through a link without.
        ln -sf "${a#--rules=}" "$(dirname "$log")/linked.rules"
        a=--rules=$(dirname "$log")/linked.rules ;;
    esac
    args+=("$a")
  done
  sc_start firestore "$log" "$launcher" start --host=127.0.0.1 --port="$port" "${args[@]}"
  sc_wait_http "http://127.0.0.1:$port/" 60 "$SC_PID_firestore" "$log"
}

# sc_npm_ci installs the npm packages of package-lock.json when they are
# missing or older than the lock: the Firebase CLI (Auth emulator), the
# Firebase JS SDK, esbuild and TypeScript (the web app and its client),
# firebase-admin (the Node backend example). It fails if npm is missing.
sc_npm_ci() {
  if [ -x node_modules/.bin/firebase ] && [ -x node_modules/.bin/esbuild ] && [ -x node_modules/.bin/tsc ] && [ -d node_modules/firebase ] && [ -d node_modules/firebase-admin ] &&
    [ node_modules/.package-lock.json -nt package-lock.json ]; then
    return 0
  fi
  command -v npm >/dev/null 2>&1 || sc_die "npm is not installed; the Auth emulator and the web app need Node.js packages.
  Debian/Ubuntu: sudo apt-get install -y nodejs npm"
  echo "installing the npm packages of package-lock.json (npm ci, about a minute the first time)…" >&2
  # No install scripts: esbuild's platform binary comes as an optional package.
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2 || sc_die "npm ci failed"
}

# sc_firebase_cli prints the project's Firebase CLI, installing the npm
# packages when it is missing.
sc_firebase_cli() {
  sc_npm_ci
  echo node_modules/.bin/firebase
}

# sc_start_auth PORT DIR starts the Firebase Auth emulator (Node, no Java)
# with its own config in DIR, on PORT and two ports next to it.
sc_start_auth() {
  local port=$1 dir=$2 cli
  cli=$(sc_firebase_cli) || exit 1
  cli=$(cd "$(dirname "$cli")" && pwd)/firebase
  sc_port_free "$port" || sc_die "port $port is in use (set AUTH_PORT)"
  cat >"$dir/firebase.json" <<JSON
{"emulators": {"auth": {"host": "127.0.0.1", "port": $port},
               "hub": {"host": "127.0.0.1", "port": $((port + 1))},
               "logging": {"host": "127.0.0.1", "port": $((port + 2))},
               "ui": {"enabled": false}}}
JSON
  # It writes firebase-debug.log into its working directory: run it in DIR.
  sc_start auth "$dir/auth.log" bash -c 'cd "$1" && shift && exec "$@"' _ "$dir" \
    "$cli" emulators:start --only auth --project "${PROJECT_ID:-demo-shardcount}" --config "$dir/firebase.json"
  sc_wait_http "http://127.0.0.1:$port/" 90 "$SC_PID_auth" "$dir/auth.log"
}

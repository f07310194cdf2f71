#!/usr/bin/env bash
# The test command: gofmt, go vet, go mod tidy and staticcheck checks, a
# bounded run of the time fuzzer, then go test -race against a private
# Firestore emulator and Auth emulator on free ports, stopped even when a
# test fails; then the core e2e suite again with the counters in a named
# Firestore database (FIRESTORE_DATABASE).
#
# It installs what the tests need when it is missing, and says so: the npm
# packages of package-lock.json (the Firebase CLI for the Auth emulator, the
# Firebase JS SDK and esbuild for the web app), and Debian's chromium package
# for the browser test (when running as root with apt-get; otherwise that
# test skips and says why).
#
# Extra arguments go to `go test` (default ./...); a package path is
# relative to where you run the script. TEST_FORMAT=standard-verbose shows
# every test's log, passing ones too (a gotestsum format).
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture
caller=$PWD
cd "$(dirname "$0")/.."
repo=$PWD
. scripts/lib.sh
args=() flags=
for a in "$@"; do
  case "$a" in -*) flags=1 ;; esac # packages come first; a flag's value is left as it is
  case "$flags$a" in
    ./*|../*|/*) # a path from the caller's directory, as go test takes it from the repository's
      dots=${a#"${a%%/...}"} # a trailing /... stays
      p=$(cd "$caller" && realpath -m "${a%/...}")
      case "$p" in "$repo") a=.$dots ;; "$repo"/*) a=./${p#"$repo"/}$dots ;; esac ;;
  esac
  args+=("$a")
done
set -- ${args[@]+"${args[@]}"}

sc_workdir
started=$SECONDS
step() { echo "== $* ($((SECONDS - started)) s)"; }
# A heartbeat through the whole run, for the stretches where nothing
# prints (a fresh machine's builds, one long test). Stopped, it stops its
# sleep too, which would hold a log pipe open.
(trap 'kill "$s" 2>/dev/null; exit' TERM
  while :; do sleep 20 & s=$!; wait "$s"; echo "  … still running ($((SECONDS - started)) s)"; done) &
heartbeat=$!
# What the tests install comes over the network: it starts first, in the
# background, while the checks below keep the CPU busy. Each runs in a
# session of its own, out of reach of a Ctrl-C (npm ci or dpkg stopped
# midway leaves a broken install for the next run), and a run that ends
# early waits for them.
npm= apt=
finish() {
  trap '' INT TERM # the installs are finishing; the cleanup must still run
  if [ -n "$npm$apt" ]; then
    echo "waiting for the installs begun in the background to finish…"
    for p in $npm $apt; do wait "$p" 2>/dev/null || true; done
  fi
  kill "$heartbeat" 2>/dev/null || true
  sc_cleanup
}
trap finish EXIT
step "npm packages and Chromium, when missing, installing in the background"
setsid bash -c '. scripts/lib.sh; sc_npm_ci' >"$tmp/npm.log" 2>&1 &
npm=$!
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium package (once; about a minute)…"
    setsid bash -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium' >"$tmp/apt.log" 2>&1 &
    apt=$!
  else
    echo "chromium is not installed and cannot be installed here (not root, or no apt-get): the browser test will skip"
  fi
fi

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[ -z "$unformatted" ] || { echo "gofmt would change:"; echo "$unformatted"; exit 1; }

step "no build outputs tracked"
# An executable binary, or any file over 1 MB (images under docs/ aside),
# is a build output or data that does not belong in the repository.
bad=$(git ls-files -z | while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  case "$f" in docs/*.png|docs/*.svg) continue ;; esac
  case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" in
    7f454c46|cffaedfe|cefaedfe|feedface|feedfacf|4d5a*) echo "$f"; continue ;; # ELF, Mach-O, PE
  esac
  [ "$(wc -c <"$f")" -le 1000000 ] || echo "$f"
done)
[ -z "$bad" ] || { echo "tracked build outputs or files over 1 MB (remove them; build into a temporary directory):"; echo "$bad"; exit 1; }

step "go vet, go mod tidy"
go vet ./...
go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

step "staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

step "npm packages"
installed=0
wait "$npm" || installed=$?
npm=
cat "$tmp/npm.log"
[ "$installed" = 0 ] || exit 1

step "Chromium, for the browser test"
if [ -n "$apt" ] && ! wait "$apt"; then
  tail -n 20 "$tmp/apt.log"
  echo "could not install chromium: the browser test will skip"
fi
apt=
command -v chromium >/dev/null 2>&1 && chromium --version 2>/dev/null || true

step "time fuzzer: no input may cost more than a bounded time per byte (FuzzEdgeTime, ${FUZZ_TIME:-20s})"
# Minimizing an interesting input re-runs it many times: keep that short,
# so the budget goes to new inputs.
go test ./internal/httpapi -run '^$' -fuzz '^FuzzEdgeTime$' -fuzztime "${FUZZ_TIME:-20s}" -fuzzminimizetime 3s

step "Firestore emulator"
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

step "Auth emulator"
auth_port=$(sc_free_port)
mkdir -p "$tmp/auth"
sc_start_auth "$auth_port" "$tmp/auth"
export FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:$auth_port
# The Firebase SDKs' sign-ins get tokens for the project the emulator
# serves; the tests that sign in through them use it.
export SHARDCOUNT_AUTH_PROJECT=${PROJECT_ID:-demo-shardcount}
echo "Auth emulator on $FIREBASE_AUTH_EMULATOR_HOST"

export SHARDCOUNT_REQUIRE_EMULATORS=1 # a missing emulator fails here, rather than skipping
step "go test -race (each test is listed as it ends)"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(./...)
status=0
go run gotest.tools/gotestsum@v1.13.0 --format "${TEST_FORMAT:-testname}" --hide-summary=skipped -- \
  -race -count=1 -timeout "${GO_TEST_TIMEOUT:-15m}" "${args[@]}" || status=$?
if [ "$status" = 0 ] && [ $# -eq 0 ]; then
  # Two passes side by side, each into its own log, printed when it ends:
  # the simulation is busy on the CPU while the named-database pass mostly
  # waits on the emulator and the roll-up's cadence, so together they take
  # little more than the longer one.
  #
  # Under -race a schedule of the whole service's simulation runs ten
  # times slower, and the race run plays few: here, all of them.
  step "the whole service's simulation without the race detector (150 fixed seeds, 20 fresh), beside the e2e suite's paths on a named database (FIRESTORE_DATABASE=shardcount-named)"
  go run gotest.tools/gotestsum@v1.13.0 --format "${TEST_FORMAT:-testname}" --hide-summary=skipped -- \
    -count=1 -timeout "${GO_TEST_TIMEOUT:-15m}" ./internal/sim >"$tmp/sim.log" 2>&1 &
  sim=$!
  # The core suite once more with the counters in a named database: the
  # functions, the trigger's registration and the tests' own reads use it.
  # One test of each path that names the database (counters and their
  # shards, likes and member documents, the roll-up's trigger, reconcile,
  # a deletion's purge, a reshard): the load and timing tests touch its
  # name no more than these, and would cost two minutes more.
  FIRESTORE_DATABASE=shardcount-named go run gotest.tools/gotestsum@v1.13.0 --format "${TEST_FORMAT:-testname}" --hide-summary=skipped -- \
    -count=1 -timeout "${GO_TEST_TIMEOUT:-15m}" \
    -run '^(TestCreateCounter|TestConcurrentIncrementsAreExact|TestSameUserThroughTwoInstances|TestBatchAnswersPerItem|TestRollupWithOneEventLostIsExact|TestReconcileHealsALostLastEvent|TestDeleteCounterLeavesNothing|TestCreateAfterDeleteStartsAtZero|TestReshardQuietCounterFinishesOnReconcile|TestAuditCorrectsTheShardsToTheMembers)$' \
    ./e2e >"$tmp/named.log" 2>&1 &
  named=$!
  for pass in sim named; do
    pass_status=0
    wait "${!pass}" || pass_status=$?
    step "$pass pass ended (status $pass_status)"
    cat "$tmp/$pass.log"
    [ "$pass_status" = 0 ] || status=$pass_status
  done
fi
if [ "$status" != 0 ]; then
  echo "--- last lines of the emulator log" >&2
  tail -n 20 "$tmp/firestore.log" >&2
  exit "$status"
fi
step "all tests passed"

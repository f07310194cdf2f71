#!/usr/bin/env bash
# Measures what OpenTelemetry costs: increments per second on a hot
# counter (1 shard, c=64) through a function server with telemetry off and
# one exporting traces and metrics to an OTLP receiver in a third process
# (as a collector would be), in alternating rounds, on
# one emulator. OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, if set, go
# to the server with telemetry on. Prints the table that bench/README.md
# quotes ("Telemetry's cost"). Extra arguments go to loadgen (e.g. -d 10s).
# About two minutes.
set -euo pipefail
unset CDPATH
cd "$(dirname "$0")/.."
. scripts/lib.sh

sc_workdir
echo "building…"
go build -o "$tmp/devserver" ./cmd/devserver
go build -o "$tmp/loadgen" ./cmd/loadgen
fs_port=$(sc_free_port)
sc_start_firestore "$fs_port" "$tmp/firestore.log"
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs_port
off=$(sc_free_port) on=$(sc_free_port) receiver=$(sc_free_port)
# As deployed (GROUP_COMMIT_MAX_WAIT=0), no roll-up trigger: the write path.
# The OTLP receiver is a third devserver, so that neither measured server
# does its work (each reports its own CPU time).
common=(AUTH=off GOOGLE_CLOUD_PROJECT=demo-bench-otel LOG_LEVEL=warn)
sc_start receiver "$tmp/receiver.log" env "${common[@]}" OTEL_SDK_DISABLED=true "$tmp/devserver" -port "$receiver"
sc_start off "$tmp/off.log" env "${common[@]}" OTEL_SDK_DISABLED=true "$tmp/devserver" -port "$off"
sc_start on "$tmp/on.log" env "${common[@]}" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$receiver" \
  OTEL_METRIC_EXPORT_INTERVAL=5000 ${OTEL_TRACES_SAMPLER:+OTEL_TRACES_SAMPLER=$OTEL_TRACES_SAMPLER} \
  ${OTEL_TRACES_SAMPLER_ARG:+OTEL_TRACES_SAMPLER_ARG=$OTEL_TRACES_SAMPLER_ARG} "$tmp/devserver" -port "$on"
for name in receiver off on; do
  pid=SC_PID_$name port=${!name}
  sc_wait_http "http://127.0.0.1:$port/" 30 "${!pid}" "$tmp/$name.log"
done
"$tmp/loadgen" -url "http://127.0.0.1:$off" -url-otel "http://127.0.0.1:$on" -d 5s -quiet "$@" overhead

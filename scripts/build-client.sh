#!/usr/bin/env bash
# Builds shardcount's web client (client/web) as an npm package into
# OUT_DIR: dist/index.js (ESM; firebase is your app's), dist/index.d.ts
# (its TypeScript types) and package.json. Install it in your app:
#
#   scripts/build-client.sh ../my-app/vendor/shardcount-client
#   (cd ../my-app/web && npm install --install-links ../vendor/shardcount-client)
#
# --install-links installs a copy: without it npm links the directory, and
# Node looks its firebase up from there, not in the app's node_modules (an
# app whose package is in a subfolder, web/ or functions/, then fails with
# "Cannot find package 'firebase'").
# OUT_DIR is relative to where you run it. An app whose bundler compiles
# TypeScript (Vite, esbuild) may import client/web/src/index.ts instead.
set -euo pipefail
unset CDPATH # cd prints the directory when CDPATH finds it, which $(cd …; pwd) would capture
out=${1:?usage: scripts/build-client.sh OUT_DIR}
mkdir -p -- "$out"
out=$(cd -- "$out" && pwd)
cd "$(dirname "$0")/.."
. scripts/lib.sh
sc_npm_ci
node_modules/.bin/tsc -p client/web --outDir "$out/dist"
node_modules/.bin/esbuild client/web/src/index.ts --bundle --format=esm --platform=neutral \
  --external:firebase --outfile="$out/dist/index.js" --log-level=warning
cp client/web/package.json "$out/package.json"
echo "built shardcount-client into $out: npm install --install-links $out"

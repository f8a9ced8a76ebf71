#!/usr/bin/env bash
# npm run dev [-- --line 1|2] [--port 5678] [--sandbox-port 4010] [--fresh]
# Builds and packs the package, then scripts/dev.ts starts the sandbox and a real n8n with the
# package installed as a community package (see that file). Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${TMPDIR:-/tmp}/business-messaging-dev"
mkdir -p "$out"
echo "== build"
npm run build >"$out/build.log" 2>&1 || { cat "$out/build.log"; echo "build failed"; exit 1; }
rm -f "$out"/*.tgz
tarball=$(npm pack --silent --pack-destination "$out" 2>>"$out/build.log" | tail -n 1)
[ -f "$out/$tarball" ] || { cat "$out/build.log"; echo "npm pack failed"; exit 1; }
echo "== packed $out/$tarball"
exec node node_modules/ts-node/dist/bin.js --transpile-only scripts/dev.ts --tarball "$out/$tarball" "$@"

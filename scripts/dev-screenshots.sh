#!/usr/bin/env bash
# Regenerates docs/screenshots/*.png: the example workflows as the n8n editor shows them.
#   bash scripts/dev-screenshots.sh [--line 2|1]
# Needs Debian's Chromium (apt-get install -y chromium). See scripts/dev-screenshots.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${TMPDIR:-/tmp}/business-messaging-screenshots"
mkdir -p "$out"
npm run build >"$out/build.log" 2>&1 || { cat "$out/build.log"; echo "build failed"; exit 1; }
rm -f "$out"/*.tgz
tarball=$(npm pack --silent --pack-destination "$out" 2>>"$out/build.log" | tail -n 1)
# Node 20 has WebSocket behind a flag; later versions ignore it.
exec node --experimental-websocket node_modules/ts-node/dist/bin.js --transpile-only scripts/dev-screenshots.ts --tarball "$out/$tarball" "$@"

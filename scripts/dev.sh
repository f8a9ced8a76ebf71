#!/usr/bin/env bash
# npm run dev [-- --line 1|2] [--port 5678] [--sandbox-port 4010] [--fresh]
# Builds and packs the package, then scripts/dev.ts starts the sandbox and a real n8n with the
# package installed as a community package (see that file). Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${TMPDIR:-/tmp}/business-messaging-dev"
mkdir -p "$out"
. scripts/lib/build-and-pack.sh
build_and_pack "$out"
exec node node_modules/ts-node/dist/bin.js --transpile-only scripts/dev.ts --tarball "$out/$tarball" "$@"

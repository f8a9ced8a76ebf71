#!/usr/bin/env bash
# Hardening against a real n8n (npm run test:load): n8n 2.41.1 with the packed package,
#   1. secrets: every operation (good key, faults, revoked key, key without scopes) and the trigger,
#      then the stopped n8n's SQLite database, user folder and log searched for the keys and secrets;
#   2. load: 5,000 signed events at concurrency 32 into an active trigger workflow, 1 in 10 tampered;
#   3. media (only when named: --phases media): 2,500 signed events at concurrency 32, each carrying
#      a small file, into a trigger with Download Media on; each file checked in the stored execution.
# Everything is in test/hardening/real-n8n/run.ts; options pass through, e.g.
#   scripts/load.sh --events 1000 --concurrency 8      scripts/load.sh --phases secrets
#   scripts/load.sh --phases media --media-events 2500 --media-concurrency 32
# Output and summary (hardening-real-n8n.json): $LOAD_OUT (default /tmp/business-messaging-hardening).
# LOAD_SKIP_BUILD=1 reuses dist/; HARDENING_KEEP=1 keeps the n8n user folder.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${LOAD_OUT:-/tmp/business-messaging-hardening}"
mkdir -p "$out"
. scripts/lib/build-and-pack.sh
build_and_pack "$out" "${LOAD_SKIP_BUILD:-}"
exec npx --no-install ts-node --transpile-only test/hardening/real-n8n/run.ts --tarball "$out/$tarball" --out "$out" "$@"

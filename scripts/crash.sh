#!/usr/bin/env bash
# n8n killed hard (npm run test:crash): regular mode, SQLite, the packed package installed as users
# do; a Combine workflow and the conversation example, each on its own sandbox account; n8n killed
# with SIGKILL at seeded random moments while bursts are held and answers are owed, restarted on the
# same port and user folder; every message counted at the sandboxes. Everything is in
# test/crash/run.ts; options pass through, e.g.
#   scripts/crash.sh --line 2        scripts/crash.sh --rounds 10 --kills 24 --seed 12345
#   CRASH_SEED=12345 scripts/crash.sh --line 1
# Output, n8n's logs and crash-summary.json: $CRASH_OUT (default /tmp/business-messaging-crash).
# CRASH_SKIP_BUILD=1 reuses dist/; CRASH_KEEP=1 keeps the n8n user folders.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${CRASH_OUT:-/tmp/business-messaging-crash}"
mkdir -p "$out"
t0=$(date +%s)

. scripts/lib/build-and-pack.sh
build_and_pack "$out" "${CRASH_SKIP_BUILD:-}"

# The n8n processes alive (test/crash/run.ts keeps this file current): ended here too if the run
# itself dies. Only those pids, each only while it is still an n8n, its process group with it.
export CRASH_PID_FILE="$out/crash-pids"
: >"$CRASH_PID_FILE"
cleanup() {
	local pid name
	while read -r pid name; do
		[ -n "$pid" ] || continue
		if kill -0 "$pid" 2>/dev/null && grep -q n8n "/proc/$pid/cmdline" 2>/dev/null; then
			echo "cleanup: ending $name (pid $pid)"
			kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
		fi
	done <"$CRASH_PID_FILE"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

npx --no-install ts-node --transpile-only test/crash/run.ts --tarball "$out/$tarball" --out "$out" "$@"
status=$?
echo "== test:crash took $(( $(date +%s) - t0 )) s (exit $status)"
exit $status

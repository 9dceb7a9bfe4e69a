#!/bin/bash
# asyncify.sh IN.wasm OUT.wasm: the post-link step of a program linked with
# libwasmbox_posix.a (see README.md). Runs binaryen's Asyncify, which lets
# setjmp, longjmp and fork unwind the wasm stack to the trampoline and
# rewind it, then -O2.
#   asyncify-ignore-imports   no import unwinds (the host never drives
#                             Asyncify): only the library's calls of
#                             asyncify.start_unwind do
#   asyncify-removelist       the trampoline itself is not instrumented
# ASYNCIFY_ONLYLIST=f1,f2,... limits the instrumentation to those
# functions (each function from main down to every setjmp, longjmp and
# fork call must be in it) for smaller, faster code.
# WASM_OPT overrides the wasm-opt to use; by default the one build.sh
# installed next to this script.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
IN=${1:?usage: asyncify.sh IN.wasm OUT.wasm}
OUT=${2:?usage: asyncify.sh IN.wasm OUT.wasm}
WASM_OPT=${WASM_OPT:-$HERE/binaryen/bin/wasm-opt}
[ -x "$WASM_OPT" ] || { echo "asyncify.sh: no wasm-opt at $WASM_OPT (run build.sh OUTDIR, or set WASM_OPT)" >&2; exit 1; }
# The trampoline's functions that the program has (__wb_fork_child comes
# with fork).
remove=_start,__wb_loop
if llvm-nm-19 "$IN" 2>/dev/null | grep -qw __wb_fork_child; then
	remove=$remove,__wb_fork_child
fi
args=(--asyncify
	--pass-arg=asyncify-ignore-imports
	--pass-arg=asyncify-removelist@$remove)
if [ -n "${ASYNCIFY_ONLYLIST:-}" ]; then
	args+=(--pass-arg=asyncify-onlylist@$ASYNCIFY_ONLYLIST)
fi
exec "$WASM_OPT" "${args[@]}" -O2 "$IN" -o "$OUT"

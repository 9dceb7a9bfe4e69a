#!/bin/bash
# build/posix/testdata.sh OUTDIR: builds testdata/posix/forktest.c with
# libwasmbox_posix.a into OUTDIR/forktest.wasm (the module the executor's
# fork tests run; committed as testdata/posix/forktest.wasm, so that the
# tests need no clang). `make posix-testdata` writes it there, `make
# posix-check` proves the committed one is what the source builds.
# POSIX_WORK is where the library and binaryen are built (default
# /tmp/wasmbox-posix-build, kept between runs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mkdir -p "${1:?usage: testdata.sh OUTDIR}" && cd "$1" && pwd)
WORK=${POSIX_WORK:-/tmp/wasmbox-posix-build}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C TZ=UTC
"$ROOT/build/posix/build.sh" "$WORK/out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -g0 -D_WASI_EMULATED_GETPID \
	-ffile-prefix-map="$ROOT"=/src -Wno-unused-result \
	-I"$WORK/out/include" -nostartfiles "$ROOT/testdata/posix/forktest.c" \
	-L"$WORK/out" -lwasmbox_posix -Wl,--export=__stack_pointer -o "$tmp/forktest.raw.wasm"
"$WORK/out/asyncify.sh" "$tmp/forktest.raw.wasm" "$OUT/forktest.wasm"
echo "posix: built $OUT/forktest.wasm ($(wc -c < "$OUT/forktest.wasm") bytes)" >&2

#!/bin/bash
# build/posix/build.sh OUTDIR: builds the guest side of wasmbox's process
# model for C programs (see README.md):
#   OUTDIR/libwasmbox_posix.a   fork/exec/wait/pipe/dup/kill/getpid,
#                               setjmp/longjmp over Asyncify, the _start
#                               trampoline
#   OUTDIR/include/             setjmp.h, sys/wait.h, wasmbox/posix.h:
#                               put it first on the include path (-I)
#   OUTDIR/binaryen/bin/wasm-opt  binaryen (Debian's), installed here only
# with clang-19 --target=wasm32-wasi and Debian's wasi-libc. Link a
# program with
#   $WASMCC -nostartfiles ... -L OUTDIR -lwasmbox_posix \
#     -Wl,--export=__stack_pointer
# and run asyncify.sh on the result. build.sh never puts wasm-opt on PATH:
# clang-19 runs any wasm-opt it finds on PATH at link time, and
# build/python/build.sh refuses to run when one is there.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "${1:?usage: build.sh OUTDIR}" && cd "$1" && pwd)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C TZ=UTC

log() { echo "posix: $*" >&2; }

TOOLCHAIN_PKGS="clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32"
BINARYEN_VER=108-1
missing=
for p in $TOOLCHAIN_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# --- binaryen, privately ----------------------------------------------------
if ! "$OUT/binaryen/bin/wasm-opt" --version 2>/dev/null | grep -q "version ${BINARYEN_VER%-*}"; then
	log "binaryen $BINARYEN_VER into $OUT/binaryen"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -qq "binaryen=$BINARYEN_VER" 2>/dev/null) || {
		log "apt-get download binaryen=$BINARYEN_VER failed: is that version still in the archive? (apt-cache policy binaryen)"
		exit 1
	}
	dpkg -x "$tmp"/binaryen_*.deb "$tmp/root"
	rm -rf "$OUT/binaryen"
	mkdir -p "$OUT/binaryen"
	cp -a "$tmp/root/usr/bin" "$OUT/binaryen/bin"
	[ -d "$tmp/root/usr/lib" ] && cp -a "$tmp/root/usr/lib" "$OUT/binaryen/lib"
	"$OUT/binaryen/bin/wasm-opt" --version >/dev/null
fi

# --- the library ------------------------------------------------------------
CC="clang-19 --target=wasm32-wasi --sysroot=/usr -ffile-prefix-map=$HERE=/build/posix"
CFLAGS="-O2 -g0 -Wall -Wextra -Wno-unused-parameter -D_WASI_EMULATED_GETPID -I$HERE/include"
obj=$(mktemp -d)
for f in "$HERE"/src/*.c; do
	$CC $CFLAGS -c "$f" -o "$obj/$(basename "${f%.c}").o"
done
$CC -c "$HERE/src/sp.s" -o "$obj/sp.o"
rm -f "$OUT/libwasmbox_posix.a"
(cd "$obj" && llvm-ar-19 rcsD "$OUT/libwasmbox_posix.a" $(ls *.o | sort))
rm -rf "$obj"
rm -rf "$OUT/include"
cp -a "$HERE/include" "$OUT/include"
cp "$HERE/asyncify.sh" "$OUT/asyncify.sh"
log "built $OUT/libwasmbox_posix.a"

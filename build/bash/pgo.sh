#!/bin/bash
# build/bash/pgo.sh: writes build/bash/bash.profdata, the profile that
# build/bash/build.sh compiles bash.wasm with (-fprofile-instr-use). Run by
# hand (`make bash-profile`), not by `make bash`: the profile is an input
# of the build, committed, so that `make bash-check` stays byte-exact; a
# new profile is a new input (run this, then `make bash`, commit both).
#
# As build/python/pgo.sh: wasm32-wasi has no profile runtime in Debian's
# toolchain, so the profile comes from a native x86_64 build of the same
# bash source (Debian's 5.2.15, build.sh's pin, with build/bash/patches)
# and the same clang-19, instrumented at the front end
# (-fprofile-instr-generate), configured with the options of the wasm build
# that shape function bodies (--without-bash-malloc --disable-nls
# --enable-readline --with-curses=no --disable-net-redirections), and with
# pgo/native.h forced in so that patch 0010's functions (WASMBOX_NEST) have
# the wasm build's bodies. clang keys a function's profile by its name
# (static ones as FILE.c:name) and a hash of its control flow: a function
# whose preprocessed body differs between the two targets (another
# config.h answer) gets no profile, and build.sh's log counts them.
#
# The workload (pgo/train.py): every case of the Oils spec files
# (OILS, default /work/shared/oils: see its README.md), then the scripts
# of `wasmbox bench`'s bash rows (bench/bash.go).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/build/bash
WORK=${PGO_WORK:-/tmp/wasmbox-bash-pgo}
OILS=${OILS:-/work/shared/oils}
JOBS=${JOBS:-2}
BASH_VER=$(sed -n 's/^BASH_VER=//p' "$HERE/build.sh")

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C TZ=UTC
unset CFLAGS CPPFLAGS LDFLAGS MAKEFLAGS MFLAGS
log() { echo "bash-pgo: $*" >&2; }

[ -d "$OILS/spec" ] || { log "no Oils spec files at $OILS/spec (set OILS=)"; exit 1; }
missing=
for p in clang-19 llvm-19 libclang-rt-19-dev dpkg-dev make patch libc6-dev python3; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/native" "$WORK/prof"
cd "$WORK/src"
apt-get source -qq "bash=$BASH_VER" >/dev/null 2>&1 || {
	log "apt-get source bash=$BASH_VER failed (is build.sh's pin still in the archive? build.sh adds the deb-src entry)"; exit 1; }
SRC=$WORK/src/bash-5.2.15
for p in "$HERE"/patches/*.patch; do
	[ -e "$p" ] || continue
	patch -d "$SRC" -p1 -s < "$p"
done

log "instrumented native build"
cd "$WORK/native"
clang-19 -O2 -c "$HERE/pgo/native.c" -o "$WORK/native.o"
CC=clang-19 CFLAGS="-O2 -fprofile-instr-generate -Wno-error=implicit-function-declaration -include $HERE/pgo/native.h" \
LDFLAGS="-fprofile-instr-generate" LIBS="$WORK/native.o" \
	"$SRC/configure" -q --prefix=/usr --without-bash-malloc --disable-nls --enable-readline --with-curses=no \
	--disable-net-redirections >"$WORK/configure.log" 2>&1 || { tail -30 "$WORK/configure.log"; log "configure failed"; exit 1; }
make -s -j"$JOBS" bash >"$WORK/make.log" 2>&1 || { grep -B2 -A4 'error' "$WORK/make.log" | tail -40; log "native build failed"; exit 1; }

log "profile run: Oils spec cases, bench scripts"
export LLVM_PROFILE_FILE="$WORK/prof/%4m.profraw"
python3 "$HERE/pgo/train.py" "$WORK/native/bash" "$ROOT" "$OILS"

log "merge"
llvm-profdata-19 merge --sparse -o "$HERE/bash.profdata" "$WORK"/prof/*.profraw
log "wrote $HERE/bash.profdata ($(wc -c < "$HERE/bash.profdata") bytes)"

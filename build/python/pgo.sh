#!/bin/bash
# build/python/pgo.sh: writes build/python/python.profdata, the profile
# that build/python/build.sh compiles python.wasm with
# (-fprofile-instr-use). Run by hand (`make python-profile`), not by
# `make python`: the profile is an input of the build, committed, so that
# `make python-check` stays byte-exact; a new profile is a new input
# (run this, then `make python`, and commit both).
#
# wasm32-wasi has no profile runtime in Debian's toolchain
# (libclang-rt-19-dev-wasm32 holds only the builtins), so the profile
# comes from a native x86_64 build of the same CPython source with the
# same clang-19, instrumented at the front end (-fprofile-instr-generate),
# running CPython's own PGO task (`-m test --pgo`, what
# --enable-optimizations runs) and the bench's python rows
# (build/python/pgo_train.py). clang keys a function's profile by its
# name (static ones as FILE.c:name) and a hash of its body's control flow:
# functions whose preprocessed body differs between x86_64 and wasm32-wasi
# (another pyconfig.h) get no profile there, and build.sh's log counts
# them. The native build is configured --without-computed-gotos, as the
# wasm build is, so that the eval loop's body is the same.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/build/python
WORK=${PGO_WORK:-/tmp/wasmbox-python-pgo}
JOBS=${JOBS:-2}
PY_VER=$(sed -n 's/^PY_VER=//p' "$HERE/build.sh")

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C TZ=UTC PYTHONHASHSEED=0
unset PYTHONHOME PYTHONPATH CFLAGS CPPFLAGS LDFLAGS MAKEFLAGS MFLAGS
log() { echo "python-pgo: $*" >&2; }

apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-19 llvm-19 libclang-rt-19-dev dpkg-dev make libc6-dev >/dev/null

rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/native" "$WORK/prof"
cd "$WORK/src"
apt-get source -qq "python3.11=$PY_VER" >/dev/null 2>&1 || {
	log "apt-get source python3.11=$PY_VER failed (is build.sh's pin still in the archive?)"; exit 1; }
PYSRC=$(ls -d "$WORK"/src/python3.11-*/)
for p in "$HERE"/patches/*.patch; do
	[ -e "$p" ] || continue
	patch -d "$PYSRC" -p1 -s < "$p"
done

log "instrumented native build"
cd "$WORK/native"
CC=clang-19 CFLAGS="-fprofile-instr-generate" LDFLAGS="-fprofile-instr-generate" \
	"$PYSRC/configure" -q --without-ensurepip --without-computed-gotos >/dev/null
make -s -j"$JOBS" >/dev/null 2>&1 || { log "native build failed"; exit 1; }

log "profile run: -m test --pgo, pgo_train.py"
export LLVM_PROFILE_FILE="$WORK/prof/%4m.profraw"
./python -m test --pgo --timeout=1200 >"$WORK/pgo-task.log" 2>&1 || log "some PGO tests failed (their profile counts all the same): see $WORK/pgo-task.log"
./python "$HERE/pgo_train.py" >/dev/null

log "merge"
llvm-profdata-19 merge --sparse -o "$HERE/python.profdata" "$WORK"/prof/*.profraw
log "wrote $HERE/python.profdata ($(wc -c < "$HERE/python.profdata") bytes)"

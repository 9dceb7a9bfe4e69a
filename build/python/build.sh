#!/bin/bash
# build/python/build.sh OUTDIR: builds CPython 3.11 for wasm32-wasi from
# Debian's source packages with Debian's toolchain, and writes
#   OUTDIR/python.wasm         the interpreter (zlib, sqlite3, bz2, expat in)
#   OUTDIR/python-stdlib.zip   the standard library, precompiled (.pyc only),
#                              laid out as /usr/lib/python3.11
#   OUTDIR/sqlite3.wasm        SQLite's command-line shell, from the same
#                              amalgamation and flags (build/python/sqlite/shell.sh)
#   OUTDIR/python.inputs       the source packages and toolchain they used
# Run by `make python` (and `make python-check`); not part of `make wasm`.
#
# Reproducible: the build runs in a fixed directory (WORK), with fixed
# SOURCE_DATE_EPOCH, PYTHONHASHSEED, locale and time zone; the .pyc files
# are written with unchecked-hash headers (no source mtimes) and the zip
# with fixed entry times and modes, in sorted order.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/build/python
OUT=$(mkdir -p "${1:-$ROOT/wasm}" && cd "${1:-$ROOT/wasm}" && pwd)
WORK=${PYTHON_WORK:-/tmp/wasmbox-python-build}
JOBS=${JOBS:-2}

# The source packages (Debian 12, bookworm). A security update of one of
# them makes apt-get source fail for the old version: update the pin here,
# run make python and commit the result.
PY_VER=3.11.2-6+deb12u8
ZLIB_VER=1:1.2.13.dfsg-1
SQLITE_VER=3.40.1-2+deb12u2
BZIP2_VER=1.0.8-5
TOOLCHAIN_PKGS="clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32"
BUILD_PKGS="dpkg-dev tcl make gcc libc6-dev pkg-config zip"

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C TZ=UTC PYTHONHASHSEED=0
unset PYTHONHOME PYTHONPATH CFLAGS CPPFLAGS LDFLAGS MAKEFLAGS MFLAGS
start=$(date +%s)

log() { echo "python: $*" >&2; }

# One build at a time in WORK: the directory is fixed (its path is in the
# output), and a second run would wipe the first one's files (and a
# second apt-get would wait on dpkg's lock). The lock is a file next to
# WORK, held until this script exits (the kernel drops it with the
# process); a second run says so and waits for it.
mkdir -p "$(dirname "$WORK")"
exec 9>"$WORK.lock"
if ! flock -n 9; then
	log "another build.sh is using $WORK (lock $WORK.lock held): waiting for it to finish"
	flock 9
fi

# clang-19 runs binaryen's wasm-opt on what it links for wasm32 whenever it
# finds one on PATH (and its --no-wasm-opt writes no output at all), which
# gives other bytes than the recorded build: refuse rather than differ.
if command -v wasm-opt >/dev/null; then
	log "wasm-opt ($(command -v wasm-opt), Debian's binaryen) is on PATH: clang-19 would run it on python.wasm and sqlite3.wasm, which then differ from the recorded build; remove binaryen or take it off PATH"
	exit 1
fi

# --- packages -------------------------------------------------------------
if ! grep -rqs 'deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	. /etc/os-release
	log "adding a deb-src entry for $VERSION_CODENAME"
	cat > /etc/apt/sources.list.d/wasmbox-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $VERSION_CODENAME-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $TOOLCHAIN_PKGS $BUILD_PKGS >/dev/null

# --- sources ----------------------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/deps/include" "$WORK/deps/lib"
cd "$WORK/src"
apt-get source -qq "python3.11=$PY_VER" "zlib=$ZLIB_VER" "sqlite3=$SQLITE_VER" "bzip2=$BZIP2_VER" >/dev/null 2>&1 || {
	log "apt-get source failed: are the pinned versions (build/python/build.sh) still in the archive?"
	apt-cache policy python3.11 zlib1g libsqlite3-0 libbz2-1.0 >&2 || true
	exit 1
}
PYSRC=$(ls -d "$WORK"/src/python3.11-*/)
ZSRC=$(ls -d "$WORK"/src/zlib-*/)
SQSRC=$(ls -d "$WORK"/src/sqlite3-*/)
BZSRC=$(ls -d "$WORK"/src/bzip2-*/)
export SOURCE_DATE_EPOCH=$(cd "$PYSRC" && dpkg-parsechangelog -STimestamp)
for p in "$HERE"/patches/*.patch; do
	[ -e "$p" ] || continue
	log "applying $(basename "$p")"
	patch -d "$PYSRC" -p1 -s < "$p"
done
cp "$HERE/wasmbox_main.c" "$PYSRC/Modules/wasmbox_main.c"
cp "$HERE/_wasmbox.py" "$PYSRC/Lib/_wasmbox.py"
cp "$HERE"/lib/*.py "$PYSRC/Lib/"

# --- toolchain: the layout wasi-env expects of a WASI SDK ----------------
SDK=$WORK/wasi-sdk
mkdir -p "$SDK/bin" "$SDK/share/wasi-sysroot/include" "$SDK/share/wasi-sysroot/lib"
ln -s /usr/include/wasm32-wasi "$SDK/share/wasi-sysroot/include/wasm32-wasi"
ln -s /usr/lib/wasm32-wasi "$SDK/share/wasi-sysroot/lib/wasm32-wasi"
PREFIX_MAP="-ffile-prefix-map=$WORK=/build"
for t in clang clang++; do
	printf '#!/bin/sh\nexec /usr/bin/%s-19 --target=wasm32-wasi %s "$@"\n' "$t" "$PREFIX_MAP" > "$SDK/bin/$t"
done
printf '#!/bin/sh\nexec /usr/bin/clang-19 --target=wasm32-wasi -E "$@"\n' > "$SDK/bin/clang-cpp"
chmod +x "$SDK"/bin/clang*
ln -s /usr/bin/wasm-ld-19 "$SDK/bin/wasm-ld"
for t in ar ranlib nm strip objdump; do ln -s "/usr/bin/llvm-$t-19" "$SDK/bin/llvm-$t"; done
ln -s /usr/bin/llvm-ranlib-19 "$SDK/bin/ranlib"
export WASI_SDK_PATH=$SDK
CC="$SDK/bin/clang --sysroot=$SDK/share/wasi-sysroot"
AR=$SDK/bin/llvm-ar
DEPCFLAGS="-O2 -g0 -w"

# --- zlib -------------------------------------------------------------------
log "zlib"
(cd "$ZSRC" && for f in adler32 crc32 deflate infback inffast inflate inftrees trees zutil compress uncompr gzclose gzlib gzread gzwrite; do
	$CC $DEPCFLAGS -D_LARGEFILE64_SOURCE=1 -DHAVE_UNISTD_H -c $f.c -o "$WORK/deps/z-$f.o"
done && cp zlib.h zconf.h "$WORK/deps/include/")
$AR rcsD "$WORK/deps/lib/libz.a" "$WORK"/deps/z-*.o

# --- bzip2 ------------------------------------------------------------------
log "bzip2"
(cd "$BZSRC" && for f in blocksort huffman crctable randtable compress decompress bzlib; do
	$CC $DEPCFLAGS -D_FILE_OFFSET_BITS=64 -c $f.c -o "$WORK/deps/bz-$f.o"
done && cp bzlib.h "$WORK/deps/include/")
$AR rcsD "$WORK/deps/lib/libbz2.a" "$WORK"/deps/bz-*.o

# --- sqlite3: the amalgamation is generated natively (tclsh), then cross-built
log "sqlite3"
mkdir -p "$WORK/sqlite-native"
(cd "$WORK/sqlite-native" && "$SQSRC/configure" -q >/dev/null && make -s sqlite3.c >/dev/null)
SQ=$HERE/sqlite
SQFLAGS="-D_WASI_EMULATED_GETPID -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_WAL
	-DSQLITE_MAX_MMAP_SIZE=0 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_MATH_FUNCTIONS
	-DSQLITE_EXTRA_INIT=wasmbox_sqlite_init -include $SQ/wasi_stubs.h"
$CC $DEPCFLAGS $SQFLAGS -c "$WORK/sqlite-native/sqlite3.c" -o "$WORK/deps/sqlite3.o"
$CC $DEPCFLAGS $SQFLAGS -I"$WORK/sqlite-native" -c "$SQ/wasi_stubs.c" -o "$WORK/deps/sqlite3-wasi.o"
cp "$WORK/sqlite-native/sqlite3.h" "$WORK/deps/include/"
$AR rcsD "$WORK/deps/lib/libsqlite3.a" "$WORK/deps/sqlite3.o" "$WORK/deps/sqlite3-wasi.o"
log "sqlite3 shell"
CC="$CC" CFLAGS="$DEPCFLAGS $SQFLAGS" "$SQ/shell.sh" "$WORK" "$OUT/sqlite3.wasm"

# --- the native build Python --------------------------------------------
log "native build python"
mkdir -p "$WORK/native"
(cd "$WORK/native" && "$PYSRC/configure" -q --without-ensurepip >/dev/null && make -s -j"$JOBS" >/dev/null 2>&1) || {
	log "native build failed"; exit 1; }
BUILDPY=$WORK/native/python

# --- CPython for wasm32-wasi ----------------------------------------------
# PGO: CPython's objects (the core and the builtin modules) are compiled
# with the profile of a native x86_64 build of the same source
# (build/python/python.profdata, from build/python/pgo.sh: wasm32-wasi has
# no profile runtime in Debian's toolchain). The flags go to make's
# CFLAGS_NODIST, not to configure: configure's checks stay the same
# (sysconfig, in the stdlib zip, records them in its *_NODIST values). clang reports per
# file in wasi-make.log the functions whose profile does not match this
# target's body (-Wprofile-instr-out-of-date) and those with none
# (-Wprofile-instr-missing).
cp "$HERE/python.profdata" "$WORK/python.profdata"
PGOFLAGS="-fprofile-instr-use=$WORK/python.profdata -Wprofile-instr-missing"
# ThinLTO (-flto=thin): CPython's objects are bitcode, and the link
# optimizes across them (cross-module inlining of the small hot functions
# that live in other files than their callers: the dict and object
# helpers, the reference-count slots), as Debian's native python3 is built
# with LTO. JIT code's instructions: csv.DictReader -10%, csv.reader
# -6.6%, the loop -4.2% (tools/SPEED.md, pylto and stop 35). The cost is a
# larger code section (+21%), and so a slower first compile of
# python.wasm (only python3's). deepfreeze.c stays out (lto.mk). The
# link runs ThinLTO's backends in 2 threads; its output does not depend
# on their number.
PGOFLAGS="$PGOFLAGS -flto=thin"
# The C tools' string functions (build/ctools/wasi_string.c: memchr,
# memrchr, strlen, memcpy, memmove, memset with simd128 and bulk memory),
# linked as an object before wasi-libc, whose 4-bytes-a-step loops then
# stay out of the link. CPython copies and scans strings and bytes with
# them (str slicing and joining, the io layer's buffers, csv's fields).
# Through make's LDFLAGS_NODIST, as the PGO flags: configure's checks
# stay the same. They are leaves, and wazero runs simd128 and bulk memory
# as it does for bash and the C tools.
$CC -O2 -g0 -fno-builtin -msimd128 -mbulk-memory -c "$ROOT/build/ctools/wasi_string.c" -o "$WORK/wasi_string.o"
STRFLAGS="$WORK/wasi_string.o -flto=thin -Wl,--thinlto-jobs=2"
log "wasm32-wasi python"
mkdir -p "$WORK/wasi"
cd "$WORK/wasi"
# --with-pymalloc: CPython 3.11's configure turns its small-object
# allocator off for WASI (and Emscripten), which sends every int, tuple
# and dict of a loop to wasi-libc's dlmalloc (malloc and free were about a
# tenth of the guest's time in the csv.DictReader row, tools/SPEED.md).
# Its arenas come from malloc on WASI (no mmap), as on any platform
# without mmap; native CPython always has it on.
DEPS=$WORK/deps
CONFIG_SITE=$PYSRC/Tools/wasm/config.site-wasm32-wasi \
CFLAGS="-O2 -g0 -Wno-error=int-conversion -I$DEPS/include" \
LDFLAGS="-L$DEPS/lib" \
ZLIB_CFLAGS="-I$DEPS/include" ZLIB_LIBS="-L$DEPS/lib -lz" \
BZIP2_CFLAGS="-I$DEPS/include" BZIP2_LIBS="-L$DEPS/lib -lbz2" \
LIBSQLITE3_CFLAGS="-I$DEPS/include" LIBSQLITE3_LIBS="-L$DEPS/lib -lsqlite3" \
	"$PYSRC/Tools/wasm/wasi-env" "$PYSRC/configure" -q \
	--host=wasm32-unknown-wasi --build="$("$PYSRC/config.guess")" \
	--with-build-python="$BUILDPY" --prefix=/usr \
	--disable-test-modules --without-ensurepip --with-pymalloc >/dev/null
"$PYSRC/Tools/wasm/wasi-env" make -s -j"$JOBS" -f Makefile -f "$HERE/lto.mk" CFLAGS_NODIST="$PGOFLAGS" LDFLAGS_NODIST="$STRFLAGS" python.wasm >/dev/null 2>"$WORK/wasi-make.log" || {
	tail -40 "$WORK/wasi-make.log"; log "wasi build failed"; exit 1; }
"$PYSRC/Tools/wasm/wasi-env" make -s -f Makefile -f "$HERE/lto.mk" CFLAGS_NODIST="$PGOFLAGS" LDFLAGS_NODIST="$STRFLAGS" pybuilddir.txt >/dev/null 2>>"$WORK/wasi-make.log"
# The wasmbox reactor (wasmbox_main.c: _initialize and wasmbox_run) from the
# same objects as the command python.wasm.
"$PYSRC/Tools/wasm/wasi-env" make -s -f Makefile -f "$HERE/lto.mk" -f "$HERE/reactor.mk" CFLAGS_NODIST="$PGOFLAGS" LDFLAGS_NODIST="$STRFLAGS" WASMBOX_MAIN="$PYSRC/Modules/wasmbox_main.c" \
	python-reactor.wasm >/dev/null 2>>"$WORK/wasi-make.log" || { tail -40 "$WORK/wasi-make.log"; log "reactor link failed"; exit 1; }
/usr/bin/llvm-strip-19 --strip-debug -o python-reactor.stripped.wasm python-reactor.wasm
# binaryen's wasm-opt over the linked module: cross-function inlining and
# its -O3 passes over the whole program (full LTO's link did not finish on
# this machine, tools/SPEED.md). The binaryen is build/posix's private one
# (Debian's 108, never on PATH: clang-19 would run it at link time).
# -ocimfs 200: functions with one caller are inlined only up to 200
# expressions (binaryen's default is any size, which merged bz2's and
# mpdecimal's callees into functions over the runtime's compile caps at
# their 3x margin, wasmbin.TestToolModulesWithinCaps). -g keeps the names.
# wasm-opt writes a data count section whenever bulk memory is enabled,
# which the runtime's snapshot preparation refuses: nodatacount.py drops
# it (the segments stay active ones, no code uses memory.init).
log "wasm-opt"
"$ROOT/build/posix/build.sh" "$WORK/posix" >/dev/null
WASMOPT=$WORK/posix/binaryen/bin/wasm-opt
"$WASMOPT" -g -O3 -ocimfs 200 --enable-bulk-memory --enable-simd --enable-sign-ext --enable-mutable-globals \
	--enable-nontrapping-float-to-int python-reactor.stripped.wasm -o python-reactor.opt.wasm
"$BUILDPY" -E -S "$HERE/nodatacount.py" python-reactor.opt.wasm "$OUT/python.wasm"

# --- the standard library -------------------------------------------------
log "stdlib"
SYSCONFIG=$(ls "$WORK/wasi/$(cat pybuilddir.txt)"/_sysconfigdata_*.py)
"$BUILDPY" -E -S "$HERE/pack.py" "$PYSRC/Lib" "$SYSCONFIG" "$OUT/python-stdlib.zip"

# --- inputs -------------------------------------------------------------------
{
	echo "# The inputs of python.wasm, python-stdlib.zip and sqlite3.wasm (build/python/build.sh)."
	(cd "$WORK/src" && sha256sum *.dsc)
	for p in $TOOLCHAIN_PKGS; do dpkg-query -W -f '${Package} ${Version}\n' "$p"; done
	"$WASMOPT" --version
	(cd "$ROOT" && sha256sum build/python/build.sh build/ctools/wasi_string.c build/posix/build.sh build/python/nodatacount.py build/python/pack.py build/python/reactor.mk build/python/lto.mk build/python/wasmbox_main.c build/python/_wasmbox.py build/python/pgo.sh build/python/pgo_train.py build/python/python.profdata build/python/lib/* build/python/sqlite/* $(ls build/python/patches/*.patch 2>/dev/null))
} > "$OUT/python.inputs"
log "built $OUT/python.wasm ($(wc -c < "$OUT/python.wasm") bytes), $OUT/python-stdlib.zip ($(wc -c < "$OUT/python-stdlib.zip") bytes), $OUT/sqlite3.wasm ($(wc -c < "$OUT/sqlite3.wasm") bytes) in $(( $(date +%s) - start ))s"

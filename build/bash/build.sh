#!/bin/bash
# build/bash/build.sh OUTDIR: builds GNU bash 5.2.15 for wasm32-wasi from
# Debian's source package (the same version as the reference bash on these
# machines) with Debian's toolchain (clang-19, wasi-libc), and writes
#   OUTDIR/bash.wasm     the shell (a WASI command: _start)
#   OUTDIR/bash.inputs   the source package, toolchain and files it used
# Run by `make bash` (and `make bash-check`); not part of `make wasm`.
#
# What bash needs and wasi-libc lacks comes from two places:
#   build/posix   fork, exec, wait, pipe, dup, setjmp/longjmp (Asyncify),
#                 the _start trampoline; its asyncify.sh is the post-link
#                 step, with its private binaryen (never on PATH)
#   build/bash/compat  signals (delivered at safe points), the sandbox's
#                 user, termios (ENOTTY), rlimits, umask, mkstemp, ...
# Patches to bash's source are in build/bash/patches (see its README.md).
#
# Reproducible: the build runs in a fixed directory (WORK) with fixed
# SOURCE_DATE_EPOCH, locale and time zone, paths mapped to /build.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/build/bash
OUT=$(mkdir -p "${1:-$ROOT/wasm}" && cd "${1:-$ROOT/wasm}" && pwd)
WORK=${BASH_WORK:-/tmp/wasmbox-bash-build}
JOBS=${JOBS:-2}

# The source package (Debian 12, bookworm). A security update makes
# apt-get source fail for the old version: update the pin, run make bash
# and commit the result.
BASH_VER=5.2.15-2
TOOLCHAIN_PKGS="clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32"
BUILD_PKGS="dpkg-dev make patch"

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C TZ=UTC
unset CFLAGS CPPFLAGS LDFLAGS MAKEFLAGS MFLAGS
start=$(date +%s)

log() { echo "bash: $*" >&2; }

# clang-19 runs binaryen's wasm-opt at link time whenever one is on PATH,
# which gives other bytes than the recorded build: refuse rather than differ.
if command -v wasm-opt >/dev/null; then
	log "wasm-opt ($(command -v wasm-opt)) is on PATH: clang-19 would run it at link time and bash.wasm would differ from the recorded build; take it off PATH (build/posix installs its own)"
	exit 1
fi

# --- packages ---------------------------------------------------------------
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
	apt-get update -qq
fi
missing=
for p in $TOOLCHAIN_PKGS $BUILD_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# --- sources ----------------------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/compat" "$WORK/obj"
cd "$WORK/src"
apt-get source -qq "bash=$BASH_VER" >/dev/null 2>&1 || {
	log "apt-get source bash=$BASH_VER failed: is the pinned version (build/bash/build.sh) still in the archive?"
	apt-cache showsrc bash | grep '^Version' >&2 || true
	exit 1
}
SRC=$WORK/src/bash-5.2.15
export SOURCE_DATE_EPOCH=$(cd "$SRC" && dpkg-parsechangelog -STimestamp)
for p in "$HERE"/patches/*.patch; do
	[ -e "$p" ] || continue
	log "applying $(basename "$p")"
	patch -d "$SRC" -p1 -s < "$p"
done
cp -a "$HERE/compat" "$WORK/compat/src"

# --- build/posix: fork, exec, setjmp; binaryen for the asyncify step ----------
log "build/posix"
"$ROOT/build/posix/build.sh" "$WORK/posix" >/dev/null
POSIX=$WORK/posix

# --- toolchain ------------------------------------------------------------------
mkdir -p "$WORK/bin"
COMPAT=$WORK/compat/src
printf '#!/bin/sh\nexec /usr/bin/clang-19 --target=wasm32-wasi --sysroot=/usr -ffile-prefix-map=%s=/build "$@"\n' "$WORK" > "$WORK/bin/cc"
chmod +x "$WORK/bin/cc"
CC=$WORK/bin/cc
# compat's headers first (they wrap build/posix's setjmp.h and wasi-libc's
# signal.h and sys/resource.h with #include_next), then build/posix's.
INC="-I$COMPAT/include -I$POSIX/include -include $COMPAT/include/wasmbox_compat.h"
# NO_MAIN_ENV_ARG: main(argc, argv) (env from environ); wasi-libc's start
# code calls only that form (clang names it __main_argc_argv), a 3-argument
# main would be dropped by the linker without a word.
DEFS="-DNO_MAIN_ENV_ARG -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS -D_WASI_EMULATED_GETPID -D_WASI_EMULATED_MMAN"

# --- compat -----------------------------------------------------------------------
log "compat"
for f in "$COMPAT"/*.c; do
	$CC -O2 -g0 -Wall -Wextra -Wno-unused-parameter $INC $DEFS -c "$f" -o "$WORK/compat/$(basename "${f%.c}").o"
done
(cd "$WORK/compat" && /usr/bin/llvm-ar-19 rcsD libwasmbox_compat.a $(ls *.o | sort))

# --- configure and make -------------------------------------------------------------
log "configure"
cd "$WORK/obj"
# The C tools' string functions (build/ctools/wasi_string.c: memchr,
# strlen, memcpy, memmove, memset with simd128 and bulk memory), linked
# before wasi-libc, whose 4-bytes-a-step copies then stay out of the link:
# bash measures strlen, memcpy and memset among its hottest functions
# (BENCHMARKS.md, the bash section). They are leaves: Asyncify leaves them
# alone.
$CC -O2 -g0 -fno-builtin -msimd128 -mbulk-memory -c "$ROOT/build/ctools/wasi_string.c" -o "$WORK/wasi_string.o"
grep -v '^#' "$HERE/config.cache" > config.cache
# The link: build/posix's _start (-nostartfiles) and library; --wrap for
# compat's SIGPIPE and kill-of-self, metadata and chdir; the shadow stack pointer exported for
# fork; an 8 MiB shadow stack (bash keeps jmp_bufs, which hold Asyncify's
# saved frames, in stack frames).
# (One line: configure copies LDFLAGS into a Makefile variable.)
# -lc-printscan-long-double: bash's printf formats floats as long double;
# without it wasi-libc aborts on printf %f.
LINK="-nostartfiles -Wl,--export=__stack_pointer -Wl,-z,stack-size=8388608"
for sym in write writev kill stat lstat fstatat access faccessat open execve chdir __main_argc_argv; do
	LINK="$LINK -Wl,--wrap=$sym"
done
# PGO: bash's objects (with readline and lib/sh) are compiled with the
# profile of a native x86_64 build of the same source
# (build/bash/bash.profdata, from build/bash/pgo.sh: wasm32-wasi has no
# profile runtime in Debian's toolchain). The log counts the functions
# whose profile does not match this target's body
# (-Wprofile-instr-out-of-date) and those with none
# (-Wprofile-instr-missing).
cp "$HERE/bash.profdata" "$WORK/bash.profdata"
# LTO (-flto, wasm-ld's default --lto-O2): bash's objects and libraries
# are optimized as one module, so the profile's inlining crosses files.
# Measured (instructions executed, valgrind, the bench's two scripts
# scaled down, BENCHMARKS.md): PGO -4.5%, PGO with LTO -9%, LTO alone
# -1%; -O3 instead of -O2 another 0-2% for a module 17% bigger: -O2.
PGOFLAGS="-fprofile-instr-use=$WORK/bash.profdata -Wprofile-instr-missing"
CC="$CC" AR=/usr/bin/llvm-ar-19 RANLIB=/usr/bin/llvm-ranlib-19 \
CFLAGS="-O2 -flto -g0 $PGOFLAGS -Wno-error=implicit-function-declaration $INC $DEFS" \
LDFLAGS="-L$WORK/compat -L$POSIX $LINK" \
LIBS="$WORK/wasi_string.o -lwasmbox_compat -lwasmbox_posix -lwasmbox_compat -lc-printscan-long-double -lwasi-emulated-signal -lwasi-emulated-process-clocks -lwasi-emulated-mman" \
	"$SRC/configure" -q --host=wasm32-unknown-wasi --build=x86_64-pc-linux-gnu \
	--prefix=/usr --without-bash-malloc --disable-nls --enable-readline --with-curses=no \
	--disable-net-redirections --cache-file=config.cache >"$WORK/configure.log" 2>&1 || {
	tail -30 "$WORK/configure.log"; log "configure failed"; exit 1; }
log "make"
make -s -j"$JOBS" bash >"$WORK/make.log" 2>&1 || { grep -B2 -A4 'error' "$WORK/make.log" | tail -60; log "make failed"; exit 1; }
awk 'match($0, /may be incomplete: of [0-9]+ functions?, [0-9]+/) { split(substr($0, RSTART, RLENGTH), a, /[^0-9]+/); m += a[3] }
	match($0, /may be out of date: of [0-9]+ functions?, [0-9]+/) { split(substr($0, RSTART, RLENGTH), a, /[^0-9]+/); o += a[3] }
	/no profile data available for file/ { f++ }
	END { printf "bash: PGO: %d functions without profile data, %d with a mismatched (ignored) profile, %d files with none\n", m, o, f }' "$WORK/make.log" >&2

# --- function-pointer casts, asyncify (build/posix), strip ------------------------------
# bash is K&R C and calls many functions through pointers of another type
# (unwind-protect cleanups, builtins, hash-table callbacks: void f(char *)
# through int (*)()). Native ABIs shrug; wasm traps ("indirect call type
# mismatch") on the first such call. binaryen's --fpcast-emu gives every
# function in the table one uniform signature, as Emscripten's
# EMULATE_FUNCTION_POINTER_CASTS does; it must run before Asyncify.
log "fpcast-emu, asyncify"
"$POSIX/binaryen/bin/wasm-opt" --fpcast-emu -g bash -o "$WORK/bash.fpcast.wasm"
# ASYNCIFY_OPT: binaryen's -O3 after the instrumentation (-1% of the
# instructions against -O2).
# ASYNCIFY_REMOVE: bash's error reporters. Each prints a message (stdio,
# which asyncify.sh already leaves out), looks up BASH_SOURCE for its
# prefix, and returns or exits the process (fatal_error: sh_exit, no trap);
# none sets a jump point, jumps or forks (asyncify.sh checks that no direct
# call of theirs reaches an unwind). Asyncify counts them as able to
# unwind only through indirect calls (find_variable's dynamic-value
# functions, exit's stdio cleanup, signal handlers run by a write), and
# every xmalloc calls fatal_error: with them, half of bash's functions
# (xmalloc, hash_search, list_string, make_word_list, the unwind-protect
# frames, ...) carried Asyncify's code. Not report_error (set -e:
# exit_shell runs the EXIT trap) nor parser_error or file_error.
ASYNCIFY_OPT=-O3 ASYNCIFY_REMOVE="error_prolog get_name_for_error fatal_error internal_error internal_warning internal_inform internal_debug sys_error programming_error" \
	"$POSIX/asyncify.sh" "$WORK/bash.fpcast.wasm" "$WORK/bash.async.wasm"
/usr/bin/llvm-strip-19 --strip-debug -o "$OUT/bash.wasm" "$WORK/bash.async.wasm"

# --- inputs -----------------------------------------------------------------------------
{
	echo "# The inputs of bash.wasm (build/bash/build.sh)."
	(cd "$WORK/src" && sha256sum *.dsc)
	for p in $TOOLCHAIN_PKGS; do dpkg-query -W -f '${Package} ${Version}\n' "$p"; done
	"$POSIX/binaryen/bin/wasm-opt" --version
	(cd "$ROOT" && sha256sum build/bash/build.sh build/bash/pgo.sh build/bash/pgo/* build/bash/bash.profdata build/bash/config.cache build/bash/compat/*.c build/bash/compat/include/*.h build/bash/compat/include/sys/*.h \
		build/ctools/wasi_string.c build/posix/build.sh build/posix/asyncify.sh build/posix/src/* build/posix/include/*.h build/posix/include/*/*.h $(ls build/bash/patches/*.patch 2>/dev/null))
} > "$OUT/bash.inputs"
log "built $OUT/bash.wasm ($(wc -c < "$OUT/bash.wasm") bytes) in $(( $(date +%s) - start ))s"

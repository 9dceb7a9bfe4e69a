#!/bin/bash
# build/ctools/build.sh OUTDIR: builds GNU grep, GNU sed and an awk for
# wasm32-wasi from Debian's source packages with Debian's clang/lld 19 and
# wasi-libc, and writes
#   OUTDIR/grep.wasm     GNU grep (grep, egrep, fgrep)
#   OUTDIR/sed.wasm      GNU sed
#   OUTDIR/awk.wasm      the awk (see README.md for which and why)
#   OUTDIR/{sort,uniq,wc,cut,sha256sum}.wasm  those GNU coreutils
#   OUTDIR/{cat,tr,head,tail,tee}.wasm  those GNU coreutils (pipeline stages)
#   OUTDIR/jq16.wasm     jq 1.6 with oniguruma (the jq command)
#   OUTDIR/ctools.inputs the source packages and toolchain they used
# Run by `make ctools` (and `make ctools-check`); not part of `make wasm`.
#
# Each is a plain WASI command (_start); the runtime adds the sched_yield
# import that its fuel metering calls (wasmbin.AddYieldImport).
#
# Reproducible: the build runs in a fixed directory (WORK) with fixed
# SOURCE_DATE_EPOCH, locale and time zone, and -ffile-prefix-map.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/build/ctools
OUT=$(mkdir -p "${1:-$ROOT/wasm/ctools}" && cd "${1:-$ROOT/wasm/ctools}" && pwd)
WORK=${CTOOLS_WORK:-/tmp/wasmbox-ctools-build}
JOBS=${JOBS:-2}

# The source packages (Debian 12, bookworm). A security update of one of
# them makes apt-get source fail for the old version: update the pin here,
# run make ctools and commit the result.
GREP_VER=3.8-5
SED_VER=4.9-1+deb12u1
MAWK_VER=1.3.4.20200120-3.1
PCRE2_VER=10.42-1
COREUTILS_VER=9.1-1
JQ_VER=1.6-2.1+deb12u2
ONIG_VER=6.9.8-1
TOOLCHAIN_PKGS="clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32"
BUILD_PKGS="dpkg-dev make patch"

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C TZ=UTC
unset CFLAGS CPPFLAGS LDFLAGS LIBS MAKEFLAGS MFLAGS CC
start=$(date +%s)

log() { echo "ctools: $*" >&2; }

# clang-19 runs binaryen's wasm-opt on what it links for wasm32 whenever it
# finds one on PATH, which gives other bytes than the recorded build.
if command -v wasm-opt >/dev/null; then
	log "wasm-opt ($(command -v wasm-opt)) is on PATH: clang-19 would run it on the modules, which then differ from the recorded build; remove binaryen or take it off PATH"
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
if [ -z "${CTOOLS_NO_APT:-}" ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $TOOLCHAIN_PKGS $BUILD_PKGS >/dev/null
fi

# --- sources ----------------------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/bin"
cd "$WORK/src"
apt-get source -qq "grep=$GREP_VER" "sed=$SED_VER" "mawk=$MAWK_VER" "pcre2=$PCRE2_VER" "coreutils=$COREUTILS_VER" \
	"jq=$JQ_VER" "libonig=$ONIG_VER" >/dev/null 2>&1 || {
	log "apt-get source failed: are the pinned versions (build/ctools/build.sh) still in the archive?"
	apt-cache policy grep sed mawk libpcre2-8-0 coreutils jq libonig5 >&2 || true
	exit 1
}
GREPSRC=$(ls -d "$WORK"/src/grep-*/)
SEDSRC=$(ls -d "$WORK"/src/sed-*/)
MAWKSRC=$(ls -d "$WORK"/src/mawk-*/)
PCRE2SRC=$(ls -d "$WORK"/src/pcre2-*/)
COREUTILSSRC=$(ls -d "$WORK"/src/coreutils-*/)
JQSRC=$(ls -d "$WORK"/src/jq-*/)
ONIGSRC=$(ls -d "$WORK"/src/libonig-*/)
# The newest of the changelogs: one date for every file.
SOURCE_DATE_EPOCH=0
for s in "$GREPSRC" "$SEDSRC" "$MAWKSRC" "$PCRE2SRC" "$COREUTILSSRC"; do
	t=$(cd "$s" && dpkg-parsechangelog -STimestamp)
	[ "$t" -gt "$SOURCE_DATE_EPOCH" ] && SOURCE_DATE_EPOCH=$t
done
export SOURCE_DATE_EPOCH
for tool in grep sed mawk coreutils; do
	src=$(ls -d "$WORK"/src/$tool-*/)
	for p in "$HERE"/patches/$tool-*.patch; do
		[ -e "$p" ] || continue
		log "applying $(basename "$p")"
		patch -d "$src" -p1 -s < "$p"
	done
done
# Debian's patches (and ours) leave some inputs of the autotools newer
# than their outputs (make would run automake): one time for every file.
# (jq and oniguruma are compiled file by file, without make: their dates
# do not matter, and they are not among the changelogs above, so that
# adding them left the other modules' bytes as they were.)
find "$GREPSRC" "$SEDSRC" "$MAWKSRC" "$PCRE2SRC" "$COREUTILSSRC" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

# --- toolchain --------------------------------------------------------------
# Debian's wasi-libc installs its headers and libraries under
# /usr/{include,lib}/wasm32-wasi, which is a sysroot of /usr for clang.
cat > "$WORK/bin/cc" <<CC
#!/bin/sh
exec /usr/bin/clang-19 --target=wasm32-wasi --sysroot=/usr -ffile-prefix-map=$WORK=/build "\$@"
CC
chmod +x "$WORK/bin/cc"
CC=$WORK/bin/cc
AR=/usr/bin/llvm-ar-19
RANLIB=/usr/bin/llvm-ranlib-19
# WASI has no signals, process clocks, getpid or mmap; wasi-libc emulates
# what the tools use of them (signal() for SIGPIPE, clock(), getpid(),
# anonymous mmap).
EMU="-D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS -D_WASI_EMULATED_GETPID -D_WASI_EMULATED_MMAN"
EMULIBS="-lwasi-emulated-signal -lwasi-emulated-process-clocks -lwasi-emulated-getpid -lwasi-emulated-mman"
OPT="-O2 -g0"
$CC $OPT -c "$HERE/wasi_compat.c" -o "$WORK/wasi_compat.o"
# memchr, memrchr, strlen, memcpy, memmove, memset with simd128 and bulk
# memory, linked before wasi-libc (see wasi_string.c).
$CC -O2 -g0 -fno-builtin -msimd128 -mbulk-memory -c "$HERE/wasi_string.c" -o "$WORK/wasi_string.o"
COMPAT="$WORK/wasi_compat.o $WORK/wasi_string.o"

# What configure cannot find out by running a program (it cross-compiles)
# or finds missing although the tools never reach it (see README.md).
GNULIB_CACHE="ac_cv_func_pipe=yes ac_cv_func_dup=yes ac_cv_func_dup2=yes gl_cv_func_dup2_works=yes
	ac_cv_func_getdtablesize=yes ac_cv_have_decl_getdtablesize=yes
	gl_cv_func_setlocale_null_all_mtsafe=yes gl_cv_func_setlocale_null_one_mtsafe=yes
	gl_cv_func_memchr_works=yes gl_cv_func_working_getdelim=yes ac_cv_func_rawmemchr=yes"
HOST="--host=wasm32-unknown-wasi --build=x86_64-linux-gnu"

# gnu_build DIR CONFIGURE_ARGS...: configure and build a gnulib package;
# the compat declarations go at the end of its config.h (coreutils': lib/).
gnu_build() {
	local dir=$1; shift
	(cd "$dir" &&
		CC=$CC AR=$AR RANLIB=$RANLIB CFLAGS="$OPT $EMU" LDFLAGS="$EMULIBS" LIBS="$COMPAT" \
			./configure -q $HOST --disable-nls --disable-threads "$@" $GNULIB_CACHE >"$WORK/$(basename "$dir").configure.log" 2>&1 &&
		cat "$HERE/wasi_compat.h" >> "$(if [ -f lib/config.h ]; then echo lib/config.h; else echo config.h; fi)") || {
		tail -40 "$WORK/$(basename "$dir").configure.log"; log "$dir: configure failed"; exit 1; }
}
# mk DIR TARGET...: make in DIR, its log in WORK.
mk() {
	local dir=$1; shift
	make -s -j"$JOBS" -C "$dir" "$@" >>"$WORK/make.log" 2>&1 || {
		tail -40 "$WORK/make.log"; log "make -C $dir $*: failed"; exit 1; }
}

# --- PCRE2, for grep -P -------------------------------------------------------
# The library's files as its NON-AUTOTOOLS-BUILD lists them, with the
# generic config.h and character tables (no JIT: it emits machine code;
# pcre2_jit_compile.c then only has the entry points, which fail).
log "pcre2"
PCRE2=$WORK/pcre2
mkdir -p "$PCRE2/include" "$PCRE2/obj"
cp "$PCRE2SRC/src/config.h.generic" "$PCRE2SRC/src/config.h"
cp "$PCRE2SRC/src/pcre2.h.generic" "$PCRE2/include/pcre2.h"
cp "$PCRE2SRC/src/pcre2_chartables.c.dist" "$PCRE2SRC/src/pcre2_chartables.c"
for f in auto_possess chartables compile config context convert dfa_match error extuni find_bracket \
	jit_compile maketables match match_data newline ord2utf pattern_info script_run serialize string_utils study \
	substitute substring tables ucd valid_utf xclass; do
	$CC $OPT -DHAVE_CONFIG_H -DPCRE2_CODE_UNIT_WIDTH=8 -DPCRE2_STATIC -DSUPPORT_UNICODE -DHAVE_MEMMOVE \
		-I"$PCRE2/include" -c "$PCRE2SRC/src/pcre2_$f.c" -o "$PCRE2/obj/pcre2_$f.o"
done
$AR rcsD "$PCRE2/libpcre2-8.a" "$PCRE2"/obj/*.o

# --- jq 1.6 with oniguruma (before the slow coreutils; nothing of it is shared)
# Neither is built with its autotools (jq's tarball has no configure, and
# Debian's build runs autoreconf): the files their Makefile.am lists, with
# what configure would find for wasm32-wasi given as -D (see README.md).
log "jq"
# oniguruma: the files of libonig_la_SOURCES (src/Makefile.am, without the
# POSIX API), with a config.h of wasm32's sizes.
ONIG=$WORK/onig
mkdir -p "$ONIG/obj"
cat > "$ONIG/config.h" <<ONIGCONF
#define HAVE_ALLOCA 1
#define HAVE_ALLOCA_H 1
#define HAVE_STDINT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define HAVE_INTTYPES_H 1
#define PACKAGE "onig"
#define PACKAGE_VERSION "${ONIG_VER%-*}"
#define VERSION "${ONIG_VER%-*}"
#define SIZEOF_INT 4
#define SIZEOF_LONG 4
#define SIZEOF_LONG_LONG 8
#define SIZEOF_VOIDP 4
ONIGCONF
for f in regparse regcomp regexec regenc regerror regext regsyntax regtrav regversion st reggnu \
	unicode unicode_unfold_key unicode_fold1_key unicode_fold2_key unicode_fold3_key ascii utf8 \
	utf16_be utf16_le utf32_be utf32_le euc_jp euc_jp_prop sjis sjis_prop iso8859_1 iso8859_2 \
	iso8859_3 iso8859_4 iso8859_5 iso8859_6 iso8859_7 iso8859_8 iso8859_9 iso8859_10 iso8859_11 \
	iso8859_13 iso8859_14 iso8859_15 iso8859_16 euc_tw euc_kr big5 gb18030 koi8_r cp1251 onig_init; do
	$CC $OPT -w -I"$ONIG" -I"$ONIGSRC/src" -c "$ONIGSRC/src/$f.c" -o "$ONIG/obj/$f.o"
done
(cd "$ONIG/obj" && $AR rcsD "$ONIG/libonig.a" $(ls *.o | LC_ALL=C sort))
# jq: Debian's patches are applied (apt-get source), its generated parser
# and lexer are in the tarball; builtin.inc and version.h as its
# Makefile.am makes them (Debian's version is "1.6").
for p in "$HERE"/patches/jq-*.patch; do
	log "applying $(basename "$p")"
	patch -d "$JQSRC" -p1 -s < "$p"
done
echo '#define JQ_VERSION "1.6"' > "$JQSRC/src/version.h"
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$/\\n"/' "$JQSRC/src/builtin.jq" > "$JQSRC/src/builtin.inc"
# What jq's configure finds on Debian, as far as wasi-libc has it: every
# math function but pow10 (glibc 2.27 dropped it; Debian's jq says "not
# found at build time" too), gamma from jq_wasi.c; thread-local storage
# (jv_alloc's handler; one thread), arc4random for the hash seed.
# HAVE_MKSTEMP although wasi-libc has none: jq calls no mkstemp, and
# util.c's replacement for systems without one calls mktemp, which
# wasi-libc lacks too (the define drops that unused code).
JQDEFS="-DHAVE_LIBONIG=1 -DHAVE_MEMMEM=1 -DHAVE_ALLOCA=1 -DHAVE_ALLOCA_H=1 -DHAVE_ISATTY=1
	-DHAVE_STRPTIME=1 -DHAVE_STRFTIME=1 -DHAVE_TIMEGM=1 -DHAVE_GMTIME_R=1 -DHAVE_GMTIME=1
	-DHAVE_LOCALTIME_R=1 -DHAVE_LOCALTIME=1 -DHAVE_GETTIMEOFDAY=1 -DHAVE_TM___TM_GMT_OFF=1
	-DHAVE_ARC4RANDOM=1 -DHAVE___THREAD=1 -DIEEE_8087=1 -DHAVE_MKSTEMP=1"
for f in acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh drem erf erfc exp10 exp2 exp \
	expm1 fabs fdim floor fma fmax fmin fmod frexp gamma hypot j0 j1 jn ldexp lgamma log10 log1p log2 log \
	logb modf lgamma_r nearbyint nextafter nexttoward pow remainder rint round scalb scalbln significand \
	sin sinh sqrt tan tanh tgamma trunc y0 y1 yn; do
	JQDEFS="$JQDEFS -DHAVE_$(echo "$f" | tr a-z A-Z)=1"
done
JQO=$WORK/jq
mkdir -p "$JQO"
for f in builtin bytecode compile execute jq_test jv jv_alloc jv_aux jv_dtoa jv_file jv_parse jv_print \
	jv_unicode linker locfile util lexer parser main; do
	$CC $OPT -w -Werror=implicit-function-declaration $EMU $JQDEFS -include "$HERE/jq_wasi.h" \
		-I"$JQSRC" -I"$JQSRC/src" -I"$ONIGSRC/src" -c "$JQSRC/src/$f.c" -o "$JQO/$f.o"
done
$CC $OPT -c "$HERE/jq_wasi.c" -o "$WORK/jq_wasi.o"
# An 8 MiB stack, as Debian's jq has natively (wasm-ld's default is 64 KiB:
# printing 300 nested arrays overflowed it), first in memory, so that an
# overflow (jv_free of a million nested arrays; natively a SIGSEGV) traps
# instead of overwriting static data.
$CC $OPT -Wl,-z,stack-size=8388608 -Wl,--stack-first -o "$JQO/jq" "$JQO"/*.o "$ONIG/libonig.a" $COMPAT "$WORK/jq_wasi.o" -lm $EMULIBS
/usr/bin/llvm-strip-19 -o "$OUT/jq16.wasm" "$JQO/jq"

# --- GNU grep ---------------------------------------------------------------
log "grep"
gnu_build "$GREPSRC" --without-libsigsegv --enable-perl-regexp \
	PCRE_CFLAGS="-I$PCRE2/include -DPCRE2_STATIC" PCRE_LIBS="$PCRE2/libpcre2-8.a"
mk "$GREPSRC/lib"
mk "$GREPSRC/src" grep
/usr/bin/llvm-strip-19 -o "$OUT/grep.wasm" "$GREPSRC/src/grep"

# --- GNU sed ----------------------------------------------------------------
log "sed"
# No fchmod in WASI: gnulib's copy_acl then uses chmod (wasi_compat.c).
gnu_build "$SEDSRC" --disable-acl --without-selinux ac_cv_func_fchmod=no
mk "$SEDSRC" sed/sed
/usr/bin/llvm-strip-19 -o "$OUT/sed.wasm" "$SEDSRC/sed/sed"

# --- mawk -------------------------------------------------------------------
log "mawk"
# Its children (system(), pipes) go through the runtime's process ABI
# (mawk_wasi.c, patches/mawk-wasi-pipes.patch): configure is told that
# fork, pipe and wait exist, which makes it use "real pipes".
$CC $OPT -c "$HERE/mawk_wasi.c" -o "$WORK/mawk_wasi.o"
# strtod's fast path for short decimals (wasi_strtod.c), in front of
# wasi-libc's, whose long double arithmetic is software on wasm32.
$CC $OPT -c "$HERE/wasi_strtod.c" -o "$WORK/wasi_strtod.o"
(cd "$MAWKSRC" &&
	CC=$CC CFLAGS="$OPT $EMU" LDFLAGS="-lwasi-emulated-signal -Wl,--wrap=strtod" LIBS="$COMPAT $WORK/mawk_wasi.o $WORK/wasi_strtod.o" \
		./configure -q $HOST ac_cv_func_fork=yes ac_cv_func_pipe=yes ac_cv_func_wait=yes >"$WORK/mawk.configure.log" 2>&1) || {
	tail -40 "$WORK/mawk.configure.log"; log "mawk: configure failed"; exit 1; }
mk "$MAWKSRC" mawk
/usr/bin/llvm-strip-19 -o "$OUT/mawk.wasm" "$MAWKSRC/mawk"

# --- GNU coreutils: sort, uniq, wc, cut, sha256sum ---------------------------
# Only these programs (see README.md for why these). configure cannot find
# a way to read the mount table (WASI has none; only df and stat would),
# which patches/coreutils-wasi-configure.patch makes a warning.
log "coreutils"
COREUTILS_TOOLS="sort uniq wc cut sha256sum"
gnu_build "$COREUTILSSRC" --without-selinux --disable-acl --disable-xattr --without-libgmp \
	--without-openssl --disable-libcap --disable-libsmack
# POSIX threads and fork for sort (coreutils_wasi.c, include/sys/wait.h);
# printf's long double for sort -g's --debug and error messages.
CU_MAKE=(CPPFLAGS="-I$HERE/include" LIBS="$COMPAT $WORK/coreutils_wasi.o -lc-printscan-long-double")
BUILT=$(printf 'include Makefile\nwasmbox-built-sources:\n\t@echo $(BUILT_SOURCES)\n' | make -s -C "$COREUTILSSRC" -f - wasmbox-built-sources)
mk "$COREUTILSSRC" "${CU_MAKE[@]}" $BUILT
# (after the generated headers: it includes gnulib's <pthread.h>)
$CC $OPT $EMU -I"$HERE/include" -I"$COREUTILSSRC" -I"$COREUTILSSRC/lib" -include "$COREUTILSSRC/lib/config.h" \
	-c "$HERE/coreutils_wasi.c" -o "$WORK/coreutils_wasi.o"
# gnulib's library: a few of its files need what WASI lacks (getaddrinfo's
# resolver, fchown, geteuid, tzset, gnulib's own pthread emulation over
# wasi-libc's pthread types) and are for programs not built here. Every
# file that compiles goes into the archive, in a fixed order; a tool that
# needed one of the others would fail to link below.
# (gnulib's replacements of libc functions, $(gl_LIBOBJS), are objects of
# their own names: rpl_malloc, rpl_vfprintf, ...)
make -k -j"$JOBS" -C "$COREUTILSSRC" "${CU_MAKE[@]}" lib/libcoreutils.a >>"$WORK/make.log" 2>&1 || true
rm -f "$COREUTILSSRC/lib/libcoreutils.a"
GL_LIBOBJS=$(printf 'include Makefile\nwasmbox-libobjs:\n\t@echo $(gl_LIBOBJS)\n' | make -s -C "$COREUTILSSRC" -f - wasmbox-libobjs)
(cd "$COREUTILSSRC" && $AR rcsD lib/libcoreutils.a $( (ls lib/libcoreutils_a-*.o lib/*/libcoreutils_a-*.o; ls $GL_LIBOBJS 2>/dev/null) | LC_ALL=C sort))
mk "$COREUTILSSRC" "${CU_MAKE[@]}" -o lib/libcoreutils.a $(printf 'src/%s ' $COREUTILS_TOOLS)
for t in $COREUTILS_TOOLS; do
	/usr/bin/llvm-strip-19 -o "$OUT/$t.wasm" "$COREUTILSSRC/src/$t"
done

# --- GNU coreutils: the pipeline stages cat, tr, head, tail, tee --------------
# (issue 22: the Go tr took ~100 ms of `cat | tr | sort | uniq -c | wc -l`
# on 1 MB, GNU's ~3 ms.) Built from the same configured tree and gnulib
# archive as the programs above.
# They print glibc's error texts where musl's differ (wasi_strerror.c).
PIPE_TOOLS="cat tr head tail tee"
$CC $OPT -c "$HERE/wasi_strerror.c" -o "$WORK/wasi_strerror.o"
mk "$COREUTILSSRC" CPPFLAGS="-I$HERE/include" \
	LIBS="$COMPAT $WORK/coreutils_wasi.o $WORK/wasi_strerror.o -Wl,--wrap=strerror -lc-printscan-long-double" \
	-o lib/libcoreutils.a $(printf 'src/%s ' $PIPE_TOOLS)
for t in $PIPE_TOOLS; do
	/usr/bin/llvm-strip-19 -o "$OUT/$t.wasm" "$COREUTILSSRC/src/$t"
done

# --- the index: the command names of these modules ---------------------------
# (make wasm merges it into wasm/commands.txt, see package wasm)
printf '%s\n' "awk mawk" "cut cut" "egrep grep" "fgrep grep" "grep grep" "mawk mawk" "nawk mawk" "sed sed" \
	"sha256sum sha256sum" "sort sort" "uniq uniq" "wc wc" "jq jq16" > "$OUT/commands.txt"
# (the pipeline stages' block)
for t in $PIPE_TOOLS; do echo "$t $t"; done >> "$OUT/commands.txt"
LC_ALL=C sort -o "$OUT/commands.txt" "$OUT/commands.txt"

# --- inputs -------------------------------------------------------------------
{
	echo "# The inputs of the modules of wasm/ctools (build/ctools/build.sh)."
	(cd "$WORK/src" && sha256sum *.dsc)
	for p in $TOOLCHAIN_PKGS; do dpkg-query -W -f '${Package} ${Version}\n' "$p"; done
	(cd "$ROOT" && sha256sum build/ctools/build.sh build/ctools/wasi_compat.[ch] build/ctools/wasi_string.c build/ctools/wasi_string_test.c build/ctools/wasi_strtod.c build/ctools/mawk_wasi.c build/ctools/coreutils_wasi.c build/ctools/include/sys/wait.h $(ls build/ctools/patches/*.patch 2>/dev/null))
	(cd "$ROOT" && sha256sum build/ctools/wasi_strerror.c) # (the pipeline stages' block)
	(cd "$ROOT" && sha256sum build/ctools/jq_wasi.[ch]) # (jq's block)
} > "$OUT/ctools.inputs"
log "built $(cd "$OUT" && for f in *.wasm; do printf '%s (%s bytes) ' "$f" "$(wc -c < "$f")"; done)in $(( $(date +%s) - start ))s"

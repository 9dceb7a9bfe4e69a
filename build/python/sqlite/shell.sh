#!/bin/bash
# build/python/sqlite/shell.sh WORK OUT: SQLite's command-line shell
# (shell.c) for wasm32-wasi, written to OUT (sqlite3.wasm). Run by
# build/python/build.sh after it has generated the amalgamation in
# WORK/sqlite-native and compiled it, with CC (the wasm32-wasi clang) and
# CFLAGS (its flags for the amalgamation) set: the shell links the very
# objects Python links, WORK/deps/sqlite3.o and sqlite3-wasi.o, and zlib
# (for the shell's zipfile and sqlar).
#
# What a sandbox has not: processes (-DSQLITE_NOHAVE_SYSTEM, and
# shell.patch: .system and .shell say so; -DSQLITE_OMIT_POPEN: .output
# |cmd, .once |cmd and .import |cmd say that pipes are not supported), a
# line editor (none is configured: the shell reads lines itself),
# loadable extensions (the amalgamation omits them), users (pwd.h: the
# home directory is $HOME), a terminal (shell_wasi.c). Out of memory ends
# the shell (shell_wasi.c). It is a WASI command (_start), not a reactor:
# the shell starts in well under a millisecond, a snapshot would buy
# nothing.
set -euo pipefail
WORK=$1
OUT=$2
SQ=$(cd "$(dirname "$0")" && pwd)
: "${CC:?}" "${CFLAGS:?}"

(cd "$WORK/sqlite-native" && make -s shell.c >/dev/null)
mkdir -p "$WORK/sqlite-shell"
cp "$WORK/sqlite-native/shell.c" "$WORK/sqlite-shell/shell.c"
patch -s -d "$WORK/sqlite-shell" -p1 < "$SQ/shell.patch"
SHFLAGS="-DNDEBUG -DSQLITE_NOHAVE_SYSTEM -DSQLITE_OMIT_POPEN -DSQLITE_HAVE_ZLIB
	-DSQLITE_SHELL_INIT_PROC=wasmbox_shell_init
	-D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS
	-I$SQ -I$WORK/sqlite-native -I$WORK/deps/include -include $SQ/shell_wasi.h"
$CC $CFLAGS $SHFLAGS -c "$WORK/sqlite-shell/shell.c" -o "$WORK/sqlite-shell/shell.o"
$CC $CFLAGS -I"$WORK/sqlite-native" -c "$SQ/shell_wasi.c" -o "$WORK/sqlite-shell/shell_wasi.o"
# The stack first, as Python's: an overflow traps instead of overwriting data.
$CC -z stack-size=524288 -Wl,--stack-first -o "$WORK/sqlite-shell/sqlite3.wasm" \
	"$WORK/sqlite-shell/shell.o" "$WORK/sqlite-shell/shell_wasi.o" "$WORK/deps/sqlite3.o" "$WORK/deps/sqlite3-wasi.o" \
	-L"$WORK/deps/lib" -lz -lwasi-emulated-signal -lwasi-emulated-getpid -lwasi-emulated-process-clocks
/usr/bin/llvm-strip-19 --strip-debug -o "$OUT" "$WORK/sqlite-shell/sqlite3.wasm"

#!/bin/bash
# asyncify.sh IN.wasm OUT.wasm: the post-link step of a program linked with
# libwasmbox_posix.a (see README.md). Runs binaryen's Asyncify, which lets
# setjmp, longjmp and fork unwind the wasm stack to the trampoline and
# rewind it, then -O2 (ASYNCIFY_OPT).
#   asyncify-ignore-imports   no import unwinds (the host never drives
#                             Asyncify): only the library's calls of
#                             asyncify.start_unwind do
#   asyncify-removelist       the trampoline itself, and libc functions
#                             that never call back, are not instrumented
#   --strip-dwarf             see below
# ASYNCIFY_REMOVE="f1 f2 ..." leaves more of the program's own functions
# out: functions below which no setjmp, longjmp or fork is ever called
# except from a signal handler run inside a write (as for stdio output
# below). bash's error reporters (build/bash/build.sh): every allocation
# and most helpers call one, so they taint half of bash with Asyncify
# code. Each of these, and each libc name below, is checked: if its
# direct calls reach asyncify.start_unwind, the step stops and says how.
# ASYNCIFY_ONLYLIST=f1,f2,... limits the instrumentation to those
# functions (each function from main down to every setjmp, longjmp and
# fork call must be in it, the trampoline not) for smaller, faster code.
# WASM_OPT overrides the wasm-opt to use; by default the one build.sh
# installed next to this script.
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
IN=${1:?usage: asyncify.sh IN.wasm OUT.wasm}
OUT=${2:?usage: asyncify.sh IN.wasm OUT.wasm}
WASM_OPT=${WASM_OPT:-$HERE/binaryen/bin/wasm-opt}
[ -x "$WASM_OPT" ] || { echo "asyncify.sh: no wasm-opt at $WASM_OPT (run build.sh OUTDIR, or set WASM_OPT)" >&2; exit 1; }
# Not instrumented: the trampoline (it drives the unwinds), and functions
# of wasi-libc that never call back into the program, so that no setjmp,
# longjmp or fork can be below them on the stack (allocation, strings,
# formatted output; not qsort or bsearch, which call the program's
# comparator). Asyncify would instrument them for their indirect calls
# (stdio's write functions): left out, the test program is 22% smaller
# (36396 -> 29374 bytes) and its string work runs near uninstrumented
# speed. ASYNCIFY_LIBC=all instruments them too.
NOUNWIND="_start __wb_loop __wb_fork_child __wb_nest_run __wb_session_resume __wb_session_buf __wb_session_start __wb_session_stack_low"
if [ "${ASYNCIFY_LIBC:-}" != all ]; then
	NOUNWIND="$NOUNWIND malloc free calloc realloc aligned_alloc posix_memalign
		dlmalloc dlfree dlrealloc dlcalloc internal_memalign sbrk
		memcpy memmove memset memcmp memchr strlen strnlen strcmp strncmp
		strchr strrchr strstr twoway_strstr fourbyte_strstr strdup strndup
		strcpy strncpy stpcpy stpncpy strcat strncat strspn strcspn strpbrk
		strchrnul __strchrnul
		vfprintf printf_core pop_arg fmt_fp snprintf vsnprintf sprintf
		vsprintf printf fprintf dprintf vdprintf sn_write fputs puts fwrite
		__fwritex __towrite __stdio_write __stdout_write __stdio_seek
		fflush fputc putc putchar __overflow out pad
		__uflow __toread __stdio_read __shgetc __shlim __intscan
		__floatscan strtol strtoul strtoll strtoull strtoimax strtoumax
		strtof strtod strtold fgets fgetc getc ungetc fread"
fi
# The program's own (ASYNCIFY_REMOVE), checked with the libc names.
CHECK="${NOUNWIND#* __wb_session_stack_low} ${ASYNCIFY_REMOVE:-}"
NOUNWIND="$NOUNWIND ${ASYNCIFY_REMOVE:-}"
# Only the names the program has (binaryen warns of the others).
have=$(llvm-nm-19 "$IN" 2>/dev/null | awk '{print $NF}' | sort -u)
remove=$(for f in $NOUNWIND; do echo "$f"; done | sort -u | comm -12 - <(echo "$have") | paste -sd, -)
# The check: a breadth-first walk of the direct calls (wasm-dis's text)
# from each name; an indirect call is not followed (those are why the
# names are listed: Asyncify assumes any indirect call may unwind).
WASM_DIS=$(dirname "$WASM_OPT")/wasm-dis
[ -x "$WASM_DIS" ] || { echo "asyncify.sh: no wasm-dis next to $WASM_OPT (needed to check the remove list)" >&2; exit 1; }
"$WASM_DIS" "$IN" | awk -v names="$CHECK" '
	/^ \(func / { cur = substr($2, 2); next }
	cur != "" {
		s = $0
		while (match(s, /\(call \$[^ ()]+/)) {
			callee = substr(s, RSTART + 7, RLENGTH - 7)
			if (!((cur, callee) in edge)) { edge[cur, callee] = 1; out[cur] = out[cur] " " callee }
			s = substr(s, RSTART + RLENGTH)
		}
	}
	END {
		n = split(names, list, /[ \t\n]+/); bad = 0
		for (i = 1; i <= n; i++) {
			q = list[i]; if (q == "" || !(q in out)) continue
			delete seen; delete from; head = 1; tail = 1; queue[1] = q; seen[q] = 1; hit = ""
			while (head <= tail && hit == "") {
				x = queue[head++]
				m = split(out[x], cs, " ")
				for (j = 1; j <= m; j++) {
					c = cs[j]; if (c == "" || (c in seen)) continue
					seen[c] = 1; from[c] = x
					if (c == "asyncify_start_unwind") { hit = c; break }
					queue[++tail] = c
				}
			}
			if (hit != "") {
				path = hit; for (x = from[hit]; x != q; x = from[x]) path = x " -> " path
				print "asyncify.sh: " q " is in the remove list but reaches an unwind: " q " -> " path >"/dev/stderr"
				bad = 1
			}
		}
		exit bad
	}' || { echo "asyncify.sh: a function that can unwind must stay instrumented: take it out of the list" >&2; exit 1; }
args=(--asyncify --pass-arg=asyncify-ignore-imports)
if [ -n "${ASYNCIFY_ONLYLIST:-}" ]; then
	# binaryen takes one list: the only-list leaves the rest out.
	args+=(--pass-arg=asyncify-onlylist@$ASYNCIFY_ONLYLIST)
else
	args+=(--pass-arg=asyncify-removelist@$remove)
fi
# --strip-dwarf: Debian's wasi-libc.a carries DWARF, which wasm-ld links in
# (150 KiB of a 200 KiB test program), and wazero reads it to symbolize the
# stack of every proc_exit: half the CPU time of a forked child that exits
# at once. The name section stays.
# ASYNCIFY_OPT: binaryen's optimization level after the instrumentation
# (-O2 unless set; build/bash sets -O3).
exec "$WASM_OPT" "${args[@]}" ${ASYNCIFY_OPT:--O2} --strip-dwarf "$IN" -o "$OUT"

/* The trampoline: _start, and wasmbox_fork_child, the export where a
 * forked child starts (see README.md). Every unwind (setjmp, longjmp,
 * fork) ends here, in __wb_loop, which then rewinds main's stack. These
 * functions are not instrumented by Asyncify (asyncify.sh lists them in
 * asyncify-removelist). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wasi/api.h>
#include <wasi/libc.h>
#include "internal.h"

extern void __wasm_call_ctors(void);
extern int __original_main(void);

void __wb_fatal(const char *msg, unsigned long n) {
	char num[24];
	int i = sizeof num;
	num[--i] = '\n';
	do {
		num[--i] = '0' + n % 10;
		n /= 10;
	} while (n);
	static const char pre[] = "wasmbox posix: ";
	write(2, pre, sizeof pre - 1);
	write(2, msg, strlen(msg));
	write(2, ": ", 2);
	write(2, num + i, sizeof num - i);
	__wasi_proc_exit(134);
}

/* Runs main until it returns without an unwind pending. */
int __wb_loop(void) {
	for (;;) {
		int r = __original_main();
		if (__wb_op == WB_NONE)
			return r;
		asyncify_stop_unwind();
		int op = __wb_op;
		__wb_op = WB_NONE;
		unsigned long used = (unsigned long)(__wb_hdr.cur - __wb_scratch);
		if (used > WASMBOX_SCRATCH)
			__wb_fatal("the stack is deeper than the unwind area of setjmp, longjmp and fork holds (rebuild the library with a larger WASMBOX_SCRATCH); bytes needed", used);
		switch (op) {
		case WB_SETJMP: {
			__wasmbox_jmp_buf *env = __wb_target;
			if (used > WASMBOX_JMPBUF_DATA)
				__wb_fatal("setjmp: the stack is deeper than a jmp_buf holds (rebuild with a larger WASMBOX_JMPBUF_DATA); bytes needed", used);
			memcpy(env->__data, __wb_scratch, used);
			env->__used = (unsigned)used;
		}
			/* fall through: rewind to the setjmp call */
		case WB_LONGJMP: {
			__wasmbox_jmp_buf *env = __wb_target;
			__wb_hdr.cur = env->__data + env->__used;
			__wb_hdr.end = env->__data + WASMBOX_JMPBUF_DATA;
			__wb_rewind = WB_SETJMP;
			break;
		}
		case WB_IDLE:
			/* session.c: the program waits for its next call; its
			 * stack stays unwound in the scratch area until
			 * wasmbox_session_resume rewinds it. */
			__wb_idle = 1;
			return 0;
		case WB_FORK:
			/* fork.o is linked when the program calls fork. */
			__wb_do_fork();
			__wb_rewind = WB_FORK;
			break;
		default:
			__wb_fatal("unwind of unknown kind", op);
		}
		asyncify_start_rewind(&__wb_hdr);
	}
}

/* The WASI preopened directories come at descriptors 3, 4, ...; wasi-libc
 * resolves every path through them. A program that takes descriptor 3
 * for itself (a shell's `exec 3>file`, dup2 onto it, close(3)) would cut
 * off the file system. __wb_move_preopens moves each to a descriptor from
 * WB_PREOPEN_FD up (below the process handles of wait.c) and registers it
 * there with the same prefix: wasi-libc takes the newest of equal
 * prefixes, so the copy is the one used; descriptors 3 and up are free,
 * and open() gives 3 first, as on Linux. */

void __wb_move_preopens(void) {
	for (uint32_t fd = 3; fd < WB_PREOPEN_FD; fd++) {
		__wasi_prestat_t ps;
		if (__wasi_fd_prestat_get(fd, &ps) != 0)
			break;
		if (ps.tag != __WASI_PREOPENTYPE_DIR)
			continue;
		size_t n = ps.u.dir.pr_name_len;
		char *name = malloc(n + 1);
		if (name == NULL)
			return;
		uint32_t high;
		if (__wasi_fd_prestat_dir_name(fd, (uint8_t *)name, n) == 0 &&
		    __wb_host_fd_dup(fd, WB_PREOPEN_FD, &high) == 0) {
			name[n] = 0;
			if (__wasilibc_register_preopened_fd((int)high, name) == 0)
				close((int)fd);
			else
				close((int)high);
		}
		free(name);
	}
}

void _start(void) {
	__wasm_call_ctors();
	__wb_move_preopens();
	int r = __wb_loop();
	if (__wb_idle)
		return; /* a session program went idle (session.c) */
	exit(r);
}

volatile int __wb_idle;

/* Internals of libwasmbox_posix shared by its files (build/posix/README.md). */
#ifndef WASMBOX_POSIX_INTERNAL_H
#define WASMBOX_POSIX_INTERNAL_H

#include <stdint.h>
#include <setjmp.h>

/* Binaryen's Asyncify turns calls of these imports into calls of the
 * functions it adds (asyncify.sh runs it). */
#define ASYNCIFY(name) __attribute__((import_module("asyncify"), import_name(#name)))
ASYNCIFY(start_unwind) void asyncify_start_unwind(void *data);
ASYNCIFY(stop_unwind) void asyncify_stop_unwind(void);
ASYNCIFY(start_rewind) void asyncify_start_rewind(void *data);
ASYNCIFY(stop_rewind) void asyncify_stop_rewind(void);

/* Asyncify's data: the next byte to use and the end of the buffer. */
struct wb_async {
	unsigned char *cur, *end;
};

/* What unwound the stack to the trampoline (wb_op) and what the rewind
 * that follows returns to (wb_rewind). */
enum { WB_NONE, WB_SETJMP, WB_LONGJMP, WB_FORK, WB_IDLE };
extern volatile int __wb_op, __wb_rewind;
extern __wasmbox_jmp_buf *volatile __wb_target;
extern volatile int __wb_payload;
extern volatile int __wb_fork_result, __wb_fork_errno;
extern volatile uint32_t __wb_fork_pid, __wb_fork_handle;

/* The unwind area of setjmp, longjmp and fork, and a guard after it.
 * Asyncify checks the end of its buffer only when the unwind is over
 * (asyncify_stop_unwind traps), not as it writes: an unwind deeper than
 * the area runs on into the guard, and __wb_loop stops the program with a
 * message (the stack is deeper than WASMBOX_SCRATCH allows). One deeper
 * than area and guard together writes past them, into what follows, and
 * traps in stop_unwind. The header comes first, so that no overflow
 * reaches it (it holds the end the trap checks). */
#ifndef WASMBOX_SCRATCH
#define WASMBOX_SCRATCH (64 * 1024)
#endif
#define WASMBOX_GUARD (64 * 1024)
struct wb_area {
	struct wb_async hdr;
	unsigned char scratch[WASMBOX_SCRATCH + WASMBOX_GUARD];
};
extern struct wb_area __wb_area;
#define __wb_hdr (__wb_area.hdr)
#define __wb_scratch (__wb_area.scratch)
#define WB_SCRATCH_END (__wb_scratch + WASMBOX_SCRATCH + WASMBOX_GUARD)

/* nest.c: the number of nested segments open (__wasmbox_nest). */
extern volatile int __wb_nest_level;
/* sp.s */
uint32_t __wb_get_sp(void);
void __wb_set_sp(uint32_t);

/* start.c */
int __wb_loop(void);
/* __wb_move_preopens moves the WASI preopened directories from 3, 4, ...
 * to descriptors from WB_PREOPEN_FD up (start.c), at the start of a
 * program and of a session. A host that loads a session's memory image
 * into a new instance puts the preopens there too (shell/bashsession). */
#define WB_PREOPEN_FD 960
void __wb_move_preopens(void);
/* __wb_cloexec_list writes the close-on-exec descriptors (proc.c) to out,
 * at most max, and returns how many. */
int __wb_cloexec_list(int *out, int max);
void __wb_fatal(const char *msg, unsigned long n);
/* fork.c; weak: linked only with fork */
void __wb_do_fork(void) __attribute__((weak));
/* session.c: set while the program is idle between the calls of a
 * session (its stack unwound, the export that ran it returned). */
extern volatile int __wb_idle;

/* Host calls (module "wasmbox"): a WASI errno each. */
#define WASMBOX(name) __attribute__((import_module("wasmbox"), import_name(#name)))
WASMBOX(fork) uint32_t __wb_host_fork(uint32_t *ret);
WASMBOX(proc_self) uint32_t __wb_host_proc_self(uint32_t *ret);
WASMBOX(fd_dup) uint32_t __wb_host_fd_dup(uint32_t fd, uint32_t min, uint32_t *ret);
WASMBOX(fd_dup2) uint32_t __wb_host_fd_dup2(uint32_t oldfd, uint32_t newfd);
WASMBOX(pipe) uint32_t __wb_host_pipe(uint32_t *fds);
WASMBOX(proc_kill) uint32_t __wb_host_proc_kill(uint32_t pfd, uint32_t sig);
WASMBOX(spawn) uint32_t __wb_host_spawn(const char *req, uint32_t len, uint32_t *status);

/* wait.c: the children of this process. */
void __wb_child_add(int pid, int handle);
void __wb_children_forget(void);
int __wb_child_handle(int pid);
/* proc.c */
void __wb_forget_pid(void);

#endif

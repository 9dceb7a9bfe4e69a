/* Sessions: a program that lives across calls of the host (GNU bash as
 * the live shell of a sandbox session; see README.md, "Sessions").
 *
 * The program calls wasmbox_session_wait where it waits for its next
 * piece of work. That is an unwind point, exactly like fork: Asyncify
 * unwinds the stack into the scratch area, __wb_loop sees WB_IDLE and
 * returns, and the export that ran the program (_start, or
 * wasmbox_session_resume) returns to the host. The instance is then idle:
 * its whole state is its linear memory and its __stack_pointer, which the
 * host may copy as an image and load into a new instance of the same
 * module (to come back to it after a killed call, or to fork the
 * session). The host hands it the next piece of work with
 * wasmbox_session_resume, which rewinds the stack: wasmbox_session_wait
 * returns there with the work.
 *
 * These exports are in asyncify.sh's removelist (they drive the rewind). */
#include <stdlib.h>
#include "internal.h"
#include <wasmbox/session.h>

extern void __wasm_call_ctors(void);

static volatile int wb_result;
static volatile int wb_session;

int wasmbox_session_mode(void) { return wb_session; }

/* wasmbox_session_start runs the program in session mode (the host calls
 * it instead of _start, so that no command run the ordinary way can enter
 * the mode): like _start, but the call returns when the program first
 * waits in wasmbox_session_wait. */
__attribute__((export_name("wasmbox_session_start"))) int __wb_session_start(void) {
	wb_session = 1;
	__wasm_call_ctors();
	__wb_move_preopens();
	int r = __wb_loop();
	if (__wb_idle)
		return wb_result;
	exit(r);
}
static volatile int wb_op;
static char *volatile wb_arg;
static volatile unsigned wb_len;

int wasmbox_session_wait(int result, char **arg, unsigned *len) {
	if (__wb_rewind == WB_IDLE) {
		asyncify_stop_rewind();
		__wb_rewind = WB_NONE;
		*arg = wb_arg;
		*len = wb_len;
		return wb_op;
	}
	wb_result = result;
	__wb_op = WB_IDLE;
	__wb_hdr.cur = __wb_scratch;
	__wb_hdr.end = WB_SCRATCH_END;
	asyncify_start_unwind(&__wb_hdr);
	return 0;
}

/* wasmbox_session_stack_low returns the lowest address of the shadow
 * stack (wasm-ld's __stack_low). While the program is idle, the stack
 * below its __stack_pointer is dead: a memory image need not keep it. */
extern unsigned char __stack_low;
__attribute__((export_name("wasmbox_session_stack_low"))) unsigned long __wb_session_stack_low(void) {
	return (unsigned long)&__stack_low;
}

/* wasmbox_session_buf returns a buffer of len bytes (malloc'd) for the
 * argument of the next resume (0 when there is no room); the program
 * owns it once resume has been called with it. */
__attribute__((export_name("wasmbox_session_buf"))) char *__wb_session_buf(unsigned len) {
	return malloc(len ? len : 1);
}

/* wasmbox_session_resume gives the idle program its next work: op and
 * the argument (a buffer from wasmbox_session_buf, and its length).
 * It returns what the program passed to wasmbox_session_wait when it
 * went idle again, or -1 when the program was not idle. A program that
 * exits instead ends the call with proc_exit. */
__attribute__((export_name("wasmbox_session_resume"))) int __wb_session_resume(int op, char *arg, unsigned len) {
	if (!__wb_idle)
		return -1;
	__wb_idle = 0;
	wb_op = op;
	wb_arg = arg;
	wb_len = len;
	__wb_rewind = WB_IDLE;
	asyncify_start_rewind(&__wb_hdr);
	int r = __wb_loop();
	if (__wb_idle)
		return wb_result;
	exit(r);
}

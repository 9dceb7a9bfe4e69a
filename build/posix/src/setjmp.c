/* setjmp/longjmp over Asyncify (see include/setjmp.h and README.md). */
#include <string.h>
#include "internal.h"

volatile int __wb_op, __wb_rewind;
__wasmbox_jmp_buf *volatile __wb_target;
volatile int __wb_payload;
struct wb_area __wb_area __attribute__((aligned(16)));

/* Called twice per return: first to start the unwind (its result is
 * dropped by the unwinding caller), then again when the rewind reaches
 * it, to end the rewind and return 0 (capture) or longjmp's value. It
 * must keep no frame on the shadow stack: it sets __stack_pointer. */
int __wasmbox_setjmp(__wasmbox_jmp_buf *env) {
	if (__wb_rewind == WB_SETJMP) {
		asyncify_stop_rewind();
		__wb_rewind = WB_NONE;
		/* The stack pointer of the setjmp call: the frames longjmp
		 * left were never popped (no epilogue ran in an unwind). */
		__wb_set_sp(__wb_target->__sp);
		return __wb_payload;
	}
	env->__sp = __wb_get_sp();
	env->__size = WASMBOX_JMPBUF_DATA;
	env->__level = (unsigned)__wb_nest_level;
	__wb_target = env;
	__wb_payload = 0;
	__wb_op = WB_SETJMP;
	__wb_hdr.cur = __wb_scratch;
	__wb_hdr.end = WB_SCRATCH_END;
	asyncify_start_unwind(&__wb_hdr);
	return 0;
}

void __wasmbox_longjmp(__wasmbox_jmp_buf *env, int val) {
	if (env->__size != WASMBOX_JMPBUF_DATA)
		__wb_fatal("longjmp: jmp_buf not set by setjmp, or built with another WASMBOX_JMPBUF_DATA", env->__size);
	__wb_target = env;
	__wb_payload = val ? val : 1;
	__wb_op = WB_LONGJMP;
	__wb_hdr.cur = __wb_scratch;
	__wb_hdr.end = WB_SCRATCH_END;
	asyncify_start_unwind(&__wb_hdr);
}

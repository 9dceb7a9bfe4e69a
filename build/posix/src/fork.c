/* fork: unwind to the trampoline, which asks the host for a copy of the
 * instance, then rewind in both (see README.md). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "internal.h"

pid_t fork(void) {
	if (__wb_rewind == WB_FORK) {
		asyncify_stop_rewind();
		__wb_rewind = WB_NONE;
		if (__wb_fork_result < 0) {
			errno = __wb_fork_errno;
			return -1;
		}
		if (__wb_fork_result > 0)
			__wb_child_add((int)__wb_fork_pid, (int)__wb_fork_handle);
		return __wb_fork_result;
	}
	__wb_op = WB_FORK;
	__wb_hdr.cur = __wb_scratch;
	__wb_hdr.end = __wb_scratch + WASMBOX_SCRATCH;
	asyncify_start_unwind(&__wb_hdr);
	return 0;
}

pid_t vfork(void) { return fork(); }

volatile int __wb_fork_result, __wb_fork_errno;
volatile uint32_t __wb_fork_pid, __wb_fork_handle;

/* Called by __wb_loop once fork has unwound the stack to it: the host
 * copies the instance as it is now; __wb_hdr.cur is where the unwind
 * stopped, and both rewind from there. */
void __wb_do_fork(void) {
	uint32_t ret[2] = {0, 0};
	uint32_t e = __wb_host_fork(ret);
	if (e) {
		__wb_fork_result = -1;
		__wb_fork_errno = (int)e;
	} else {
		__wb_fork_result = (int)ret[0];
		__wb_fork_pid = ret[0];
		__wb_fork_handle = ret[1];
	}
}

/* The host calls this in the instance it made for a forked child: its
 * memory is the parent's in __wb_do_fork, before the host call returned
 * there. */
__attribute__((export_name("wasmbox_fork_child"))) void __wb_fork_child(void) {
	__wb_fork_result = 0;
	__wb_children_forget();
	__wb_forget_pid();
	__wb_rewind = WB_FORK;
	asyncify_start_rewind(&__wb_hdr);
	exit(__wb_loop());
}

/* __wasmbox_nest: a segment of the stack with its own trampoline, so that
 * a setjmp inside it captures only the frames below it (see README.md,
 * "Nested segments").
 *
 * A setjmp unwinds the stack to the nearest trampoline and rewinds it:
 * under _start's alone, every setjmp saves and restores every frame from
 * main down, and bash calls setjmp for every arithmetic evaluation and
 * every `[`. __wasmbox_nest(fn, arg) calls fn(arg) under a trampoline of
 * its own (__wb_nest_run, not instrumented, like __wb_loop):
 *   - setjmp below it unwinds only to it: the jmp_buf records the level
 *     (the number of segments open at the setjmp call);
 *   - longjmp to a jmp_buf of its level rewinds there; to one of an outer
 *     level, the segment ends and the longjmp goes on from its caller
 *     (the frames between are left, as any longjmp leaves them);
 *   - fork must unwind the whole stack: each segment keeps its frames
 *     aside (malloc) and the unwind goes on from its caller; when the
 *     rewind (in parent and child) comes back into the segment, it
 *     rewinds its own frames from that copy.
 * __wasmbox_nest calls __wb_nest_run through a pointer, so that Asyncify
 * treats the call as one that may unwind (an indirect call) and
 * instruments __wasmbox_nest and its callers, while __wb_nest_run itself
 * is in asyncify.sh's remove-list. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

volatile int __wb_nest_level;

/* The frames of each open segment, kept while a fork unwinds past it. */
struct wb_stash {
	unsigned char *data;
	unsigned long used, cap;
	int pending; /* a fork's rewind is to come back into this level */
};
static struct wb_stash *stash;
static int nstash;

static struct wb_stash *stash_at(int level) {
	if (level >= nstash) {
		int n = nstash ? nstash * 2 : 16;
		while (n <= level)
			n *= 2;
		struct wb_stash *s = realloc(stash, (unsigned long)n * sizeof *s);
		if (!s)
			__wb_fatal("fork in a nested segment: out of memory for its frames; segments", (unsigned long)level);
		memset(s + nstash, 0, (unsigned long)(n - nstash) * sizeof *s);
		stash = s;
		nstash = n;
	}
	return &stash[level];
}

int __wb_nest_run(int (*fn)(void *), void *arg) {
	int level = ++__wb_nest_level;
	if (level < nstash && stash[level].pending) {
		/* The rewind of a fork has come back into this segment: the
		 * frames above are rewound; rewind this segment's own. */
		struct wb_stash *s = &stash[level];
		s->pending = 0;
		asyncify_stop_rewind();
		memcpy(__wb_scratch, s->data, s->used);
		__wb_hdr.cur = __wb_scratch + s->used;
		__wb_hdr.end = WB_SCRATCH_END;
		asyncify_start_rewind(&__wb_hdr);
	}
	for (;;) {
		int r = fn(arg);
		if (__wb_op == WB_NONE) {
			__wb_nest_level = level - 1;
			return r;
		}
		asyncify_stop_unwind();
		int op = __wb_op;
		__wb_op = WB_NONE;
		unsigned long used = (unsigned long)(__wb_hdr.cur - __wb_scratch);
		if (used > WASMBOX_SCRATCH)
			__wb_fatal("the stack is deeper than the unwind area of setjmp, longjmp and fork holds (rebuild the library with a larger WASMBOX_SCRATCH); bytes needed", used);
		__wasmbox_jmp_buf *env = __wb_target;
		switch (op) {
		case WB_SETJMP:
			if ((int)env->__level != level)
				__wb_fatal("setjmp: unwound to a segment of another level", env->__level);
			if (used > WASMBOX_JMPBUF_DATA)
				__wb_fatal("setjmp: the stack is deeper than a jmp_buf holds (rebuild with a larger WASMBOX_JMPBUF_DATA); bytes needed", used);
			memcpy(env->__data, __wb_scratch, used);
			env->__used = (unsigned)used;
			/* fall through: rewind to the setjmp call */
		case WB_LONGJMP:
			if ((int)env->__level == level) {
				__wb_hdr.cur = env->__data + env->__used;
				__wb_hdr.end = env->__data + WASMBOX_JMPBUF_DATA;
				__wb_rewind = WB_SETJMP;
				asyncify_start_rewind(&__wb_hdr);
				continue;
			}
			/* A jmp_buf of an outer segment: leave this one and
			 * unwind on from the caller. */
			__wb_nest_level = level - 1;
			__wasmbox_longjmp(env, __wb_payload);
			return 0;
		case WB_FORK: {
			struct wb_stash *s = stash_at(level);
			if (s->cap < used) {
				unsigned char *d = realloc(s->data, used);
				if (!d)
					__wb_fatal("fork in a nested segment: out of memory for its frames; bytes", used);
				s->data = d;
				s->cap = used;
			}
			memcpy(s->data, __wb_scratch, used);
			s->used = used;
			s->pending = 1;
			__wb_nest_level = level - 1;
			__wb_op = WB_FORK;
			__wb_hdr.cur = __wb_scratch;
			__wb_hdr.end = WB_SCRATCH_END;
			asyncify_start_unwind(&__wb_hdr);
			return 0;
		}
		default:
			__wb_fatal("unwind of unknown kind", op);
		}
	}
}

int __wasmbox_nest(int (*fn)(void *), void *arg) {
	int (*volatile run)(int (*)(void *), void *) = __wb_nest_run;
	return run(fn, arg);
}

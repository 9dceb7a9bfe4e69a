/* wasmbox compat: sigsetjmp/siglongjmp that save and restore the signal
 * mask (compat/signal.c), over build/posix's setjmp (Asyncify), whose
 * sigsetjmp ignores savemask. bash leaves signal handlers and its own
 * blocked sections with siglongjmp (throw_to_top_level, read -t): without
 * the restore a signal would stay blocked after the jump. */
#ifndef WASMBOX_COMPAT_SETJMP_H
#define WASMBOX_COMPAT_SETJMP_H
#define sigjmp_buf __wasmbox_posix_sigjmp_buf
#include_next <setjmp.h>
#undef sigjmp_buf
#undef sigsetjmp
#undef siglongjmp
#include <signal.h>

typedef struct __wasmbox_sigjmp_buf {
	jmp_buf __jb;
	int __saved;
	sigset_t __mask;
} sigjmp_buf[1];

#define sigsetjmp(env, savemask) \
	((env)->__saved = (savemask), \
	 (env)->__saved ? (void)sigprocmask(SIG_BLOCK, (sigset_t *)0, &(env)->__mask) : (void)0, \
	 __wasmbox_setjmp((env)->__jb))
#define siglongjmp(env, val) \
	((env)->__saved ? (void)sigprocmask(SIG_SETMASK, &(env)->__mask, (sigset_t *)0) : (void)0, \
	 __wasmbox_longjmp((env)->__jb, (val)))
#endif

/* setjmp.h for wasm32-wasi programs linked with libwasmbox_posix.a
 * (build/posix/README.md). wasi-libc has setjmp/longjmp only through the
 * exception-handling proposal, which wazero lacks; these run over
 * binaryen's Asyncify instead: the program must go through
 * build/posix/asyncify.sh after linking.
 *
 * setjmp captures its caller's stack by unwinding it to the trampoline
 * (_start) and rewinding it at once; the unwound frames (the wasm locals
 * of every function from main down to the setjmp call) are copied into
 * the jmp_buf. longjmp unwinds to the trampoline and rewinds with that
 * copy. The copy holds no pointer to itself: a jmp_buf may be copied
 * with memcpy (bash's COPY_PROCENV does) and the copy used.
 *
 * C semantics hold as the standard states them: after longjmp, automatic
 * variables that are not volatile have their values of the setjmp call;
 * volatile ones (kept in memory) their latest values. */
#ifndef _WASMBOX_SETJMP_H
#define _WASMBOX_SETJMP_H

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes a jmp_buf keeps of the stack. A setjmp deeper than this
 * stops the program with a message naming the size it needed: raise it
 * (-DWASMBOX_JMPBUF_DATA=N for every file of the program and the same
 * when building the library). */
#ifndef WASMBOX_JMPBUF_DATA
#define WASMBOX_JMPBUF_DATA 16384
#endif

typedef struct __wasmbox_jmp_buf {
	unsigned int __sp;   /* __stack_pointer at the setjmp call */
	unsigned int __used; /* bytes of __data in use */
	unsigned int __size; /* WASMBOX_JMPBUF_DATA the program was built with */
	unsigned int __level; /* segments open at the setjmp call (__wasmbox_nest) */
	unsigned char __data[WASMBOX_JMPBUF_DATA];
} __attribute__((aligned(8))) __wasmbox_jmp_buf;

typedef __wasmbox_jmp_buf jmp_buf[1];
typedef __wasmbox_jmp_buf sigjmp_buf[1];

int __wasmbox_setjmp(__wasmbox_jmp_buf *) __attribute__((returns_twice, noinline));
void __wasmbox_longjmp(__wasmbox_jmp_buf *, int) __attribute__((noinline));

/* __wasmbox_nest(fn, arg) runs fn(arg) and returns its value. A setjmp
 * below it unwinds and rewinds only the frames below it instead of the
 * whole stack, and costs as much as that depth: wrap a function that
 * calls setjmp often (bash's evalexp) in it. longjmp and fork work
 * across it (src/nest.c). */
#define WASMBOX_NEST 1
int __wasmbox_nest(int (*fn)(void *), void *arg);
/* __wasmbox_jmpbuf_copy(dst, src): memcpy of a jmp_buf, but only of the
 * bytes in use (a jmp_buf is WASMBOX_JMPBUF_DATA big and seldom full). */
static inline void __wasmbox_jmpbuf_copy(void *dst, const void *src) {
	const __wasmbox_jmp_buf *s = (const __wasmbox_jmp_buf *)src;
	unsigned int n = s->__used <= WASMBOX_JMPBUF_DATA ? s->__used : WASMBOX_JMPBUF_DATA;
	__builtin_memcpy(dst, src, __builtin_offsetof(__wasmbox_jmp_buf, __data) + n);
}
#define setjmp(env) __wasmbox_setjmp(env)
#define _setjmp(env) __wasmbox_setjmp(env)
/* WASI has no signals: there is no mask to save. */
#define sigsetjmp(env, savemask) ((void)(savemask), __wasmbox_setjmp(env))
#define longjmp(env, val) __wasmbox_longjmp(env, val)
#define _longjmp(env, val) __wasmbox_longjmp(env, val)
#define siglongjmp(env, val) __wasmbox_longjmp(env, val)

#ifdef __cplusplus
}
#endif
#endif

/* build/bash/pgo/native.h: forced into every file of the native
 * (profile-collecting) build of bash by build/bash/pgo.sh, so that the
 * functions patch 0010 splits (evalexp, test_command, execute_function)
 * have the same bodies as in the wasm build and their profile matches:
 * build/posix's setjmp.h defines WASMBOX_NEST and these two. */
#define WASMBOX_NEST 1
int __wasmbox_nest(int (*fn)(void *), void *arg);
void __wasmbox_jmpbuf_copy(void *dst, const void *src);

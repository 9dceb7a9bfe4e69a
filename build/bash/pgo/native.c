/* build/bash/pgo/native.c: native stand-ins for build/posix's
 * __wasmbox_nest and __wasmbox_jmpbuf_copy (see native.h). Natively a
 * setjmp costs the same at any depth: nest just calls; a jmp_buf is
 * copied whole. */
#include <setjmp.h>
#include <string.h>

int __wasmbox_nest(int (*fn)(void *), void *arg) { return fn(arg); }

void __wasmbox_jmpbuf_copy(void *dst, const void *src) { memcpy(dst, src, sizeof(sigjmp_buf)); }

/* wasmbox compat: wasi-libc's sigset_t is one byte (signals 1-8), bash
 * blocks SIGCHLD (17), SIGTERM (15) and the rest: a 64-bit set instead.
 * This file shadows wasi-libc's (its headers include it with <...>, and
 * build/bash/compat/include comes first on the include path). */
#ifndef __wasilibc___typedef_sigset_t_h
#define __wasilibc___typedef_sigset_t_h
typedef unsigned long long sigset_t;
#endif

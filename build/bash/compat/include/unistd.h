/* wasmbox compat: wasi-libc's unistd.h plus build/posix's process calls
 * (fork, exec*, pipe, dup, dup2, getppid, ...), so that bash's sources,
 * which include <unistd.h>, see them. */
#ifndef WASMBOX_COMPAT_UNISTD_H
#define WASMBOX_COMPAT_UNISTD_H
#include_next <unistd.h>
#include <wasmbox/posix.h>
#endif

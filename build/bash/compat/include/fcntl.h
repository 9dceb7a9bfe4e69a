/* wasmbox compat: wasi-libc's fcntl.h plus build/posix's F_DUPFD and
 * fcntl (which adds F_DUPFD and F_DUPFD_CLOEXEC to wasi-libc's). */
#ifndef WASMBOX_COMPAT_FCNTL_H
#define WASMBOX_COMPAT_FCNTL_H
#include_next <fcntl.h>
#include <wasmbox/posix.h>
#endif

/* sys/wait.h for wasm32-wasi programs linked with libwasmbox_posix.a
 * (wasi-libc has none). The status is Linux's encoding. */
#ifndef _WASMBOX_SYS_WAIT_H
#define _WASMBOX_SYS_WAIT_H

#include <sys/types.h>

#define WNOHANG 1
#define WUNTRACED 2
#define WCONTINUED 8

#define WEXITSTATUS(s) (((s) & 0xff00) >> 8)
#define WTERMSIG(s) ((s) & 0x7f)
#define WSTOPSIG(s) WEXITSTATUS(s)
#define WIFEXITED(s) (!WTERMSIG(s))
#define WIFSTOPPED(s) ((short)((((s) & 0xffff) * 0x10001U) >> 8) > 0x7f00)
#define WIFSIGNALED(s) (((s) & 0xffff) - 1U < 0xffu)
#define WIFCONTINUED(s) ((s) == 0xffff)
#define WCOREDUMP(s) ((s) & 0x80)

#ifdef __cplusplus
extern "C" {
#endif
pid_t waitpid(pid_t pid, int *status, int options);
pid_t wait(int *status);
pid_t wait3(int *status, int options, void *rusage);
#ifdef __cplusplus
}
#endif
#endif

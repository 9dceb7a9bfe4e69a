/* wasmbox/posix.h: the process calls wasi-libc lacks, for wasm32-wasi
 * programs linked with libwasmbox_posix.a and run by wasmbox (see
 * build/posix/README.md and the runtime's ForkABI). Include it after the
 * system headers (it renames fcntl to add F_DUPFD). Compile with
 * -D_WASI_EMULATED_GETPID so that wasi-libc's unistd.h declares getpid
 * without deprecating it (this library defines it; do not link
 * -lwasi-emulated-getpid). */
#ifndef _WASMBOX_POSIX_H
#define _WASMBOX_POSIX_H

#include <sys/types.h>
#include <sys/wait.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fork copies the instance (memory, stack pointer, descriptors shared as
 * after fork(2)); the child runs concurrently, under the same run's
 * limits. vfork is fork. */
pid_t fork(void);
pid_t vfork(void);

/* exec runs the command through the host's executor (wasmbox.spawn) with
 * the caller's current descriptors 0, 1 and 2, waits for it and exits
 * with its status: the calling process never continues after a
 * successful exec. A command the executor cannot find is ENOENT, one it
 * denies EACCES; either returns -1. */
int execve(const char *path, char *const argv[], char *const envp[]);
int execv(const char *path, char *const argv[]);
int execvp(const char *file, char *const argv[]);
int execvpe(const char *file, char *const argv[], char *const envp[]);
int execl(const char *path, const char *arg, ...);
int execlp(const char *file, const char *arg, ...);
int execle(const char *path, const char *arg, ...);

pid_t waitpid(pid_t pid, int *status, int options);
pid_t wait(int *status);
pid_t wait3(int *status, int options, void *rusage);

int pipe(int fds[2]);
int pipe2(int fds[2], int flags);
int dup(int fd);
int dup2(int oldfd, int newfd);
int dup3(int oldfd, int newfd, int flags);

/* fcntl with F_DUPFD and F_DUPFD_CLOEXEC; the other commands go to
 * wasi-libc's fcntl. */
#ifndef F_DUPFD
#define F_DUPFD 0
#endif
#ifndef F_DUPFD_CLOEXEC
#define F_DUPFD_CLOEXEC 1030
#endif
int __wasmbox_fcntl(int fd, int cmd, ...);
#define fcntl __wasmbox_fcntl

/* kill: a child of this process (proc_kill), or this process itself
 * (it exits with status 128+sig). Signal 0 tests that the child exists. */
int kill(pid_t pid, int sig);
pid_t getpid(void);
pid_t getppid(void);

#ifdef __cplusplus
}
#endif
#endif

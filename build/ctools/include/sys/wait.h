/* <sys/wait.h> for GNU coreutils' sort on WASI (build/ctools/build.sh puts
   this directory on the include path of coreutils only). wasi-libc has no
   such header: a WASI process has no children of its own. sort names
   waitpid and fork for --compress-program, whose fork fails with ENOSYS
   (coreutils_wasi.c), so sort says it cannot fork. */
#ifndef WASMBOX_SYS_WAIT_H
#define WASMBOX_SYS_WAIT_H
#include <sys/types.h>
#define WNOHANG 1
#define WEXITSTATUS(s) (((s) & 0xff00) >> 8)
#define WTERMSIG(s) ((s) & 0x7f)
#define WIFEXITED(s) (!WTERMSIG(s))
#define WIFSIGNALED(s) (((s) & 0xffff) - 1U < 0xffu)
pid_t waitpid(pid_t, int *, int);
pid_t fork(void);
int execlp(const char *, const char *, ...);
#endif

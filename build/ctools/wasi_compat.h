/* Appended to the config.h of every tool build/ctools/build.sh builds, so
 * that it comes after the configuration and before any other header:
 * what wasi-libc lacks and gnulib's replacements expect. The functions
 * (wasi_compat.c) fail with ENOSYS where WASI preview 1 has no equivalent;
 * none of them is reached when the tools read and write files, pipes and
 * the standard streams. */
#ifndef WASMBOX_WASI_COMPAT_H
#define WASMBOX_WASI_COMPAT_H

/* gnulib's fcntl.h defines a missing F_DUPFD as 1, which is wasi-libc's
 * F_GETFD: its fcntl replacement then has two equal case labels. */
#ifndef F_DUPFD
#define F_DUPFD 0
#endif

/* wasi-libc's dirent.h declares opendirat(int, const char *); gnulib's
 * fts has a four-argument one of its own. dirent.h is included here
 * first, so that the libc declaration keeps its name and every later use
 * (gnulib's opendirat.h, opendirat.c, fts.c) takes gnulib's under another. */
#include <dirent.h>
#define opendirat gl_opendirat
/* WASI's directory entries have no socket type of their own. */
#ifndef DT_SOCK
#define DT_SOCK 5 /* __WASI_FILETYPE_SOCKET_DGRAM */
#endif

typedef struct _IO_FILE FILE;
int dup(int);
int dup2(int, int);
int pipe(int[2]);
void flockfile(FILE *);
void funlockfile(FILE *);
int ftrylockfile(FILE *);
int getdtablesize(void);
unsigned int umask(unsigned int);
int chmod(const char *, unsigned int);
/* wasi_string.c (build.sh tells gnulib that the libc has it). */
void *rawmemchr(const void *, int);
/* wasi_compat.c: the permission bits of a file from the host. */
void wasmbox_file_mode(const char *, unsigned int *);
#endif

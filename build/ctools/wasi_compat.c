/* See wasi_compat.h. WASI preview 1 has no descriptor duplication and no
 * pipes a process makes itself; stdio has no other thread to lock against. */
#include <errno.h>
#include <stdio.h>

int dup(int fd) { (void)fd; errno = ENOSYS; return -1; }
int dup2(int fd, int to) { (void)fd; (void)to; errno = ENOSYS; return -1; }
int pipe(int fds[2]) { (void)fds; errno = ENOSYS; return -1; }
void flockfile(FILE *f) { (void)f; }
void funlockfile(FILE *f) { (void)f; }
int ftrylockfile(FILE *f) { (void)f; return 0; }
/* WASI has no file mode creation mask: the host's filesystem gives new
 * files their modes. sed -i sets its temporary file's mode with chmod. */
unsigned int umask(unsigned int mask) { (void)mask; return 022; }
/* gnulib's fallback asks getrlimit(RLIMIT_NOFILE), which WASI lacks. */
int getdtablesize(void) { return 1024; }

/* musl's program_invocation_name and program_invocation_short_name
 * (__progname_full, __progname) are set by its process start, which
 * wasi-libc's has not: they stay NULL, and gnulib's error() and
 * getprogname() print "(null): " before every message. Set them from
 * argv[0] before main, as glibc and musl do. */
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

extern char *__progname, *__progname_full;

__attribute__((constructor)) static void wasmbox_set_progname(void) {
	__wasi_size_t n, size;
	if (__wasi_args_sizes_get(&n, &size) != 0 || n == 0) return;
	char **v = calloc(n + 1, sizeof(char *));
	char *buf = malloc(size + 1);
	if (v == NULL || buf == NULL || __wasi_args_get((uint8_t **)v, (uint8_t *)buf) != 0) {
		free(v);
		free(buf);
		return;
	}
	__progname_full = v[0];
	char *slash = strrchr(v[0], '/');
	__progname = slash ? slash + 1 : v[0];
	free(v); /* buf holds the strings: kept for the process's life */
}

/* The working directory: a WASI command starts in "/"; wasmbox passes the
 * guest's working directory as $PWD (as Go's wasip1 runtime expects), so
 * that relative names resolve there. When chdir fails (the directory was
 * removed), the names must not resolve against "/" instead (`cat f.txt`
 * read /f.txt): wasi-libc's working directory becomes $PWD all the same,
 * so that relative names resolve under the missing directory and fail
 * with ENOENT, as they do natively in a removed directory. */
#include <string.h>
#include <unistd.h>

extern char *__wasilibc_cwd;

__attribute__((constructor)) static void wasmbox_chdir_pwd(void) {
	const char *pwd = getenv("PWD");
	if (pwd == NULL || pwd[0] != '/') return;
	if (chdir(pwd) != 0) {
		char *dir = strdup(pwd);
		if (dir != NULL) __wasilibc_cwd = dir;
	}
}

/* isatty: wasmbox gives a guest no terminal, but its WASI describes the
 * standard streams as character devices without seek rights, which is
 * what wasi-libc's isatty takes for one (grep would colour by default
 * with --color=auto, sed -i would refuse a "terminal"). */
int isatty(int fd) {
	(void)fd;
	errno = ENOTTY;
	return 0;
}

/* Permission bits, which WASI's filestat lacks, through the wasmbox
 * runtime's metadata calls (runtime.MetaABI): chmod (gnulib's copy_acl
 * falls back to it without fchmod) and wasmbox_file_mode, with which sed -i
 * reads the mode of the file it replaces (patches/sed-inplace-mode.patch). */
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

__attribute__((import_module("wasmbox"), import_name("chmod")))
int32_t wasmbox_chmod(const char *path, uint32_t len, uint32_t mode, uint32_t follow);
__attribute__((import_module("wasmbox"), import_name("stat")))
int32_t wasmbox_stat(const char *path, uint32_t len, uint32_t follow, uint32_t *out);

/* abs_path makes path absolute against the working directory in buf. */
static const char *abs_path(const char *path, char *buf, size_t size) {
	if (path[0] == '/') return path;
	if (getcwd(buf, size) == NULL) return NULL;
	size_t n = strlen(buf), m = strlen(path);
	if (n + 1 + m + 1 > size) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	buf[n] = '/';
	memcpy(buf + n + 1, path, m + 1);
	return buf;
}

int chmod(const char *path, mode_t mode) {
	char buf[PATH_MAX];
	const char *p = abs_path(path, buf, sizeof buf);
	if (p == NULL) return -1;
	int32_t e = wasmbox_chmod(p, (uint32_t)strlen(p), (uint32_t)mode & 07777, 1);
	if (e != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

void wasmbox_file_mode(const char *path, mode_t *mode) {
	char buf[PATH_MAX];
	uint32_t out[4];
	const char *p = abs_path(path, buf, sizeof buf);
	if (p == NULL || wasmbox_stat(p, (uint32_t)strlen(p), 1, out) != 0) return;
	*mode = (*mode & ~(mode_t)07777) | (out[0] & 07777);
}
